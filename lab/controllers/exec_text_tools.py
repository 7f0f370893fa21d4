"""The text applets of an image with a shell, as busybox prints them: ``wc``, ``head``/
``tail``, ``grep``, ``tr``, ``sort``, ``uniq``, ``cut``, ``md5sum`` and ``sha256sum``.

Each works on bytes read through :mod:`exec_inputs` (files or stdin) and writes what busybox
writes, with its usage and error messages and exit codes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from lab.controllers.exec_inputs import flags, operands, read_file, read_inputs, split_option
from lab.controllers.exec_shell import Io, Shell

Tool = Callable[[Shell, list[str], Io], int]


def wc(shell: Shell, argv: list[str], io_: Io) -> int:
    wanted = [f for f in flags(argv) if f in "lwc"] or ["l", "w", "c"]
    paths = operands(argv) or [""]
    status = 0
    for path in paths:
        data = read_file(shell, path, io_, "wc") if path else io_.stdin.read_all()
        if data is None:
            status = 1
            continue
        counts = {"l": data.count(b"\n"), "w": len(data.split()), "c": len(data)}
        if len(wanted) == 1:  # one column: no padding, as busybox prints it
            line = f"{counts[wanted[0]]}"
        else:
            line = " ".join(f"{counts[f]:>7}" for f in wanted)
        io_.out((line + (f" {path}" if path else "") + "\n").encode())
    return status


def head_tail(shell: Shell, argv: list[str], io_: Io) -> int:
    head = argv[0].endswith("head")
    value, rest = split_option(argv[1:], "-n")
    count_bytes, rest = split_option(rest, "-c")
    for arg in list(rest):
        if re.match(r"^-\d+$", arg):
            value = arg[1:]
            rest.remove(arg)
    rest = [a for a in rest if a not in ("-q", "-v")]
    data, status = read_inputs(shell, [argv[0], *rest], io_, argv[0])
    if count_bytes is not None and count_bytes.lstrip("+").isdigit():
        size = int(count_bytes.lstrip("+"))
        io_.out(data[:size] if head else data[-size:] if size else b"")
        return status
    text = value or "10"
    if not text.lstrip("+-").isdigit():
        io_.err(f"{argv[0]}: invalid number '{text}'\n".encode())
        return 1
    lines = data.splitlines(keepends=True)
    count = int(text.lstrip("+-"))
    if head:
        chosen = lines[:count] if not text.startswith("-") else lines[: len(lines) - count]
    elif text.startswith("+"):  # ``tail -n +2``: from the second line on
        chosen = lines[max(count - 1, 0) :]
    else:
        chosen = lines[-count:] if count else []
    io_.out(b"".join(chosen))
    return status


def _basic_regex(pattern: str) -> str:
    """A POSIX basic regular expression (grep without ``-E``) as a Python one."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append(nxt if nxt in "|(){}+?" else "\\" + nxt)
            i += 2
            continue
        out.append("\\" + c if c in "|(){}+?" else c)
        i += 1
    return "".join(out)


def grep(shell: Shell, argv: list[str], io_: Io) -> int:
    args = argv[1:]
    patterns: list[str] = []
    while "-e" in args and args.index("-e") + 1 < len(args):
        at = args.index("-e")
        patterns.append(args[at + 1])
        del args[at : at + 2]
    found_flags = flags([argv[0], *args])
    names = operands([argv[0], *args])
    if not patterns:
        if not names:
            io_.err(b"Usage: grep [-HhnlLoqvsriwFE] [-e PATTERN]... PATTERN [FILE]...\n")
            return 2
        patterns, names = [names[0]], names[1:]
    extended = "E" in found_flags or argv[0].endswith("egrep")
    fixed = "F" in found_flags or argv[0].endswith("fgrep")
    sources = [re.escape(p) if fixed else p if extended else _basic_regex(p) for p in patterns]
    if "x" in found_flags:
        sources = [f"(?:{s})\\Z" for s in sources]
    elif "w" in found_flags:
        sources = [f"(?<!\\w)(?:{s})(?!\\w)" for s in sources]
    try:
        pattern = re.compile("|".join(sources), re.I if "i" in found_flags else 0)
    except re.error:
        io_.err(b"grep: bad regex\n")
        return 2
    invert, status, matched_any = "v" in found_flags, 0, False
    prefix = len(names) > 1 and "h" not in found_flags
    for name in names or ["-"]:
        data = read_file(shell, name, io_, "grep")
        if data is None:
            status = 2
            continue
        count = 0
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            hit = pattern.match(line) if "x" in found_flags else pattern.search(line)
            if bool(hit) == invert:
                continue
            count += 1
            if "q" in found_flags:
                return 0
            if "c" in found_flags or "l" in found_flags:
                continue
            shown = hit.group(0) if "o" in found_flags and hit else line
            lead = (f"{name}:" if prefix else "") + (f"{number}:" if "n" in found_flags else "")
            io_.out(f"{lead}{shown}\n".encode())
        matched_any = matched_any or count > 0
        if "c" in found_flags:
            io_.out(f"{name + ':' if prefix else ''}{count}\n".encode())
        elif "l" in found_flags and count:
            io_.out(f"{name}\n".encode())
    if status:  # a file it could not read: 2, whatever matched elsewhere
        return 2
    return 0 if matched_any else 1


_CLASSES = {
    "[:upper:]": "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "[:lower:]": "abcdefghijklmnopqrstuvwxyz",
    "[:digit:]": "0123456789",
    "[:space:]": " \t\n\r\f\v",
    "[:blank:]": " \t",
    "[:punct:]": "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
}
_CLASSES["[:alpha:]"] = _CLASSES["[:upper:]"] + _CLASSES["[:lower:]"]
_CLASSES["[:alnum:]"] = _CLASSES["[:alpha:]"] + _CLASSES["[:digit:]"]


def _tr_set(text: str) -> str:
    """``a-z``, ``[:upper:]`` and ``\\n`` spelled out as the characters they stand for."""
    text = text.encode().decode("unicode_escape")
    out: list[str] = []
    i = 0
    while i < len(text):
        named = next((n for n in _CLASSES if text.startswith(n, i)), None)
        if named is not None:
            out.append(_CLASSES[named])
            i += len(named)
        elif i + 2 < len(text) and text[i + 1] == "-" and ord(text[i]) <= ord(text[i + 2]):
            out.extend(chr(c) for c in range(ord(text[i]), ord(text[i + 2]) + 1))
            i += 3
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def tr(shell: Shell, argv: list[str], io_: Io) -> int:
    found_flags = flags(argv)
    sets = [_tr_set(s) for s in operands(argv)]
    if not sets or (not found_flags and len(sets) < 2):
        io_.err(
            b"BusyBox v1.36.1 (2023-07-27 17:12:24 UTC) multi-call binary.\n\n"
            b"Usage: tr [-cds] STRING1 [STRING2]\n"
        )
        return 1
    text = io_.stdin.read_all().decode("utf-8", "replace")
    first = sets[0]
    if "c" in found_flags:  # the complement: every character not in the set
        first = "".join(sorted(set(text) - set(first)))
    if "d" in found_flags:
        text = "".join(c for c in text if c not in first)
        squeeze = sets[1] if len(sets) > 1 else ""
    else:
        if len(sets) > 1:
            second = sets[1]
            target = second + second[-1:] * max(len(first) - len(second), 0)
            text = text.translate({ord(a): b for a, b in zip(first, target, strict=False)})
        squeeze = sets[-1] if "s" in found_flags else ""
    if squeeze:
        text = re.sub("([" + re.escape(squeeze) + "])\\1+", r"\1", text)
    io_.out(text.encode())
    return 0


def sort(shell: Shell, argv: list[str], io_: Io) -> int:
    separator, rest = split_option(argv[1:], "-t")
    key, rest = split_option(rest, "-k")
    data, status = read_inputs(shell, [argv[0], *rest], io_, "sort")
    found_flags = flags([argv[0], *rest])
    lines = data.decode("utf-8", "replace").splitlines()
    column = re.match(r"\d+", key or "")
    field = int(column.group(0)) if column else 0
    numeric = "n" in found_flags or bool(key and "n" in key)

    def sort_key(line: str) -> tuple[float, str]:
        text = line
        if field:
            parts = line.split(separator) if separator else line.split()
            text = (separator or " ").join(parts[field - 1 :]) if len(parts) >= field else ""
        if numeric:
            number = re.match(r"\s*(-?\d+(?:\.\d+)?)", text)
            return (float(number.group(1)) if number else 0.0, text)
        return (0.0, text.lower() if "f" in found_flags else text)

    lines.sort(key=sort_key, reverse="r" in found_flags)
    if "u" in found_flags:
        unique: dict[tuple[float, str], str] = {}
        for line in lines:
            unique.setdefault(sort_key(line), line)
        lines = list(unique.values())
    io_.out("".join(f"{line}\n" for line in lines).encode())
    return status


def uniq(shell: Shell, argv: list[str], io_: Io) -> int:
    data, status = read_inputs(shell, argv[:1] + operands(argv)[:1], io_, "uniq")
    found_flags = flags(argv)
    groups: list[list[str]] = []
    for line in data.decode("utf-8", "replace").splitlines():
        compared = line.lower() if "i" in found_flags else line
        last = groups[-1][0] if groups else None
        if groups and (last.lower() if "i" in found_flags and last else last) == compared:
            groups[-1].append(line)
        else:
            groups.append([line])
    out: list[str] = []
    for group in groups:
        if ("d" in found_flags and len(group) < 2) or ("u" in found_flags and len(group) > 1):
            continue
        out.append(f"{len(group):>7} {group[0]}" if "c" in found_flags else group[0])
    io_.out("".join(f"{line}\n" for line in out).encode())
    return status


def _ranges(spec: str) -> list[tuple[int, int]] | None:
    ranges: list[tuple[int, int]] = []
    for part in spec.split(","):
        match = re.fullmatch(r"(\d*)-?(\d*)", part)
        if match is None or not part or part == "-":
            return None
        start = int(match.group(1) or 1)
        end = int(match.group(2)) if match.group(2) else (start if "-" not in part else 10**9)
        ranges.append((start, end))
    return ranges


def cut(shell: Shell, argv: list[str], io_: Io) -> int:
    delimiter, rest = split_option(argv[1:], "-d")
    fields, rest = split_option(rest, "-f")
    characters, rest = split_option(rest, "-c")
    spec = fields or characters
    ranges = _ranges(spec) if spec else None
    if ranges is None:
        io_.err(
            b"cut: expected a list of bytes, characters, or fields\n"
            if not spec
            else f"cut: invalid range '{spec}'\n".encode()
        )
        return 1
    data, status = read_inputs(shell, [argv[0], *rest], io_, "cut")
    separator = (delimiter or "\t")[:1]
    out: list[str] = []
    for line in data.decode("utf-8", "replace").splitlines():
        if fields is None:
            out.append("".join(c for i, c in enumerate(line, 1) if _within(i, ranges)))
            continue
        if separator not in line:  # a line without the delimiter is printed whole
            if "s" not in flags([argv[0], *rest]):
                out.append(line)
            continue
        parts = line.split(separator)
        out.append(separator.join(p for i, p in enumerate(parts, 1) if _within(i, ranges)))
    io_.out("".join(f"{line}\n" for line in out).encode())
    return status


def _within(index: int, ranges: list[tuple[int, int]]) -> bool:
    return any(start <= index <= end for start, end in ranges)


def _checksum(algorithm: str) -> Tool:
    def tool(shell: Shell, argv: list[str], io_: Io) -> int:
        status = 0
        for path in operands(argv) or ["-"]:
            data = read_file(shell, path, io_, argv[0].rsplit("/", 1)[-1])
            if data is None:
                status = 1
                continue
            io_.out(f"{hashlib.new(algorithm, data).hexdigest()}  {path}\n".encode())
        return status

    return tool


TOOLS: dict[str, Tool] = {
    "wc": wc,
    "head": head_tail,
    "tail": head_tail,
    "grep": grep,
    "egrep": grep,
    "fgrep": grep,
    "tr": tr,
    "sort": sort,
    "uniq": uniq,
    "cut": cut,
    "md5sum": _checksum("md5"),
    "sha1sum": _checksum("sha1"),
    "sha256sum": _checksum("sha256"),
    "sha512sum": _checksum("sha512"),
}
