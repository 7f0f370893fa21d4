"""How much memory a container's shell command holds at its peak (pure: words in, bytes out).

A script can need far more memory than its image's footprint: ``head -c 50m /dev/zero |
tail`` makes ``tail`` keep everything it reads (it holds the last ten lines, and zeros have
no newline), ``sort`` holds all of its input, ``dd bs=100M`` allocates its block. Under a
memory limit below that, the kernel kills the container (the kubelet reports OOMKilled, 137)
as it would on a cluster; the same script under a higher limit runs on. The estimate follows
the data through each pipeline of the script: what a stage produces (``/dev/zero`` and
``yes`` without end, ``head -c N``, ``dd bs=B count=N``) and whether the next stage streams it
(``cat``, ``wc``, ``tr``, ``md5sum`` …) or holds it (``tail`` of newline-free data,
``tail -c N``, ``sort``). Anything it does not know streams and holds nothing.
"""

from __future__ import annotations

import re
import shlex

INFINITE = float("inf")
SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh"})
_SIZE = re.compile(r"^(\d+)([bkmgKMG]?)([bB]?)$")
_SEPARATORS = re.compile(r";|&&|\|\||\n|(?<![<>&])&(?![&>])")
_REDIRECT = re.compile(r"^\d*(?:[<>]+|>&|<&)(\d*|-)$")  # an operator whose target follows
_ATTACHED = re.compile(r"^\d*[<>]")  # an operator with its target: >/dev/null, 2>&1
# (busybox) head/dd suffixes: b = 512, k/K = KiB, m/M = MiB, g/G = GiB; kB, MB: powers of 1000
_UNITS = {"": 1, "b": 512, "k": 1024, "m": 1024**2, "g": 1024**3}


def _size(text: str) -> float | None:
    match = _SIZE.match(text)
    if match is None:
        return None
    number, unit, decimal = match.groups()
    if decimal and unit:
        return float(number) * float(1000 ** ("kmg".index(unit.lower()) + 1))
    return float(number) * _UNITS[unit.lower()]


def _option(words: list[str], flag: str) -> str | None:
    """The value of ``-c N`` / ``-cN`` / ``--bytes=N`` style options."""
    for index, word in enumerate(words):
        if word == flag and index + 1 < len(words):
            return words[index + 1]
        if word.startswith(flag) and len(word) > len(flag) and not word.startswith("--"):
            return word[len(flag) :]
    return None


def _stage(words: list[str], stream: float, newlines: bool) -> tuple[float, bool, float]:
    """What one pipeline stage emits (bytes, whether it has newlines) and what it holds."""
    program = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    files = [a for a in args if not a.startswith("-")]
    if program == "cat" and files:
        zero = all(f == "/dev/zero" for f in files)
        return (INFINITE, False, 0.0) if zero else (0.0, True, 0.0)
    if program == "yes":
        return INFINITE, True, 0.0
    if program == "head":
        count = _option(args, "-c")
        amount = _size(count) if count else None
        source = files[-1] if files and files[-1] != count else None
        if source == "/dev/zero":
            stream, newlines = INFINITE, False
        elif source is not None:
            stream, newlines = 0.0, True
        return (min(stream, amount) if amount is not None else 0.0), newlines, 0.0
    if program == "dd":
        options = dict(a.split("=", 1) for a in args if "=" in a)
        block = _size(options.get("bs", "512")) or 512.0
        blocks = _size(options["count"]) if "count" in options else None
        if options.get("if") == "/dev/zero":
            stream, newlines = INFINITE if blocks is None else block * blocks, False
        emitted = 0.0 if options.get("of") else stream
        return emitted, newlines, block
    if program == "tail":
        if "-f" in args or "-F" in args:
            return 0.0, True, 0.0
        count = _option(args, "-c")
        held = (_size(count) or 0.0) if count else (0.0 if newlines else stream)
        return min(held, stream), newlines, min(held, stream)
    if program == "sort":
        return stream, newlines, stream
    return stream, newlines, 0.0  # a filter that streams what it reads


def _without_redirections(words: list[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif _REDIRECT.match(word) and not word[-1:].isdigit():
            skip = True
        elif not _ATTACHED.match(word):
            kept.append(word)
    return kept


def _pipeline_bytes(text: str) -> float:
    held = 0.0
    stream, newlines = 0.0, True
    for part in text.split("|"):
        try:
            words = shlex.split(part)
        except ValueError:
            return 0.0
        words = _without_redirections(words)
        if not words:
            continue
        stream, newlines, holds = _stage(words, stream, newlines)
        held += holds
    return held


def script_of(words: list[str]) -> str:
    """The shell script a command line runs (``sh -c SCRIPT``), else the words themselves."""
    if words and words[0].rsplit("/", 1)[-1] in SHELLS and "-c" in words[1:]:
        index = words.index("-c", 1)
        return words[index + 1] if index + 1 < len(words) else ""
    return shlex.join(words)


def peak_bytes(words: list[str]) -> float:
    """The most memory any one pipeline of the command holds (0 when nothing is held)."""
    script = script_of(words)
    return max((_pipeline_bytes(p) for p in _SEPARATORS.split(script)), default=0.0)
