"""Which files a policy directory holds, and every entry refused on the way (fail closed).

A policy directory holds ``*.yaml`` and ``*.yml`` files directly; any other visible entry is
an error rather than silently skipped (a skipped file could be the deny rule someone relies
on), and so is a directory with no entry at all. Nothing here raises on what the file system
answers: a path that cannot be read is a problem like any other, because a reload runs at the
guard right before a write.
"""

from __future__ import annotations

import errno
import stat
from dataclasses import dataclass
from pathlib import Path

from policies.problems import Problem

POLICY_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class PolicyFiles:
    """The policy files some paths name, and every entry refused on the way (fail closed)."""

    files: tuple[Path, ...] = ()
    problems: tuple[Problem, ...] = ()


def _refusal(entry: Path) -> str | None:
    """Why a visible directory entry cannot be a policy file, or None when it is one.

    Symbolic links to files are followed: Kubernetes mounts a ConfigMap as links into a hidden
    ``..data`` folder. Anything skipped quietly could be a deny rule nobody enforces, so every
    other entry is refused with what to do about it.
    """
    if entry.is_symlink():
        try:
            entry.stat()
        except OSError as error:
            return _broken_link(entry, error)
    if entry.is_dir():
        return (
            "this is a directory, and subdirectories are not searched: policy files lie "
            "directly in the policy directory; move its files up, or move it out"
        )
    if entry.suffix not in POLICY_SUFFIXES:
        if entry.suffix.lower() in POLICY_SUFFIXES:
            return (
                "policy files end in lower-case .yaml or .yml: "
                f"rename it to {entry.stem}{entry.suffix.lower()}"
            )
        advice = (
            f"a JSON policy is valid YAML: rename it to {entry.stem}.yaml"
            if entry.suffix.lower() == ".json"
            else "move it out of the policy directory"
        )
        return (
            "not a policy file: only *.yaml and *.yml files are loaded, and nothing else may "
            f"lie in a policy directory; {advice}"
        )
    if not entry.is_file():
        return "not a regular file (a pipe, socket or device); a policy must be a plain file"
    return None


def _broken_link(link: Path, error: OSError) -> str:
    target = _link_target(link)
    if error.errno == errno.ELOOP:
        return (
            f"this symbolic link is part of a loop (it points to {target}, which leads back "
            "to it) and never reaches a file; point it at the policy file or remove it"
        )
    if error.errno in (errno.ENOENT, errno.ENOTDIR):
        return (
            f"this is a dangling symbolic link: its target {target} does not exist; restore "
            "the target or remove the link"
        )
    return (
        f"this symbolic link's target {target} cannot be read ({error.strerror}); make it "
        "readable or remove the link"
    )


def _link_target(link: Path) -> str:
    try:
        return str(link.readlink())
    except OSError:
        return "(unreadable)"


def _directory_files(directory: Path) -> tuple[list[Path], list[Problem]]:
    """The policy files directly in ``directory``, and a problem for every other entry.

    Names starting with "." are ignored: editors' swap and lock files (``.x.yaml.swp``,
    ``.#x.yaml``) and the bookkeeping of a ConfigMap volume (``..data``) live there.
    """
    try:
        entries = sorted(directory.iterdir())
    except OSError as error:
        return [], [Problem(str(directory), 1, 1, f"cannot list the directory: {error}")]
    files: list[Path] = []
    problems: list[Problem] = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            refusal = _refusal(entry)
        except OSError as error:
            refusal = f"cannot read it: {error.strerror}"
        if refusal is None:
            files.append(entry)
        else:
            problems.append(Problem(str(entry), 1, 1, refusal))
    if not files and not problems:
        # Refused entries are reported each with what to do; "no policy files" would hide them.
        problems.append(
            Problem(
                str(directory),
                1,
                1,
                f"no policy files in {directory}: every write would be asked for with the "
                "defaults alone (anyone may approve, even the requester); add a *.yaml policy "
                "file, or check the path (an empty directory is often a missing mount)",
            )
        )
    return files, problems


def find_policy_files(paths: list[Path]) -> PolicyFiles:
    """The files ``load`` reads, and why any entry is refused; a file named explicitly is
    read whatever its suffix (the person named it)."""
    files: list[Path] = []
    problems: list[Problem] = []
    for path in paths:
        try:
            status = path.stat()
        except OSError as error:
            # Missing, a loop, too long a name, no permission: the path is a problem like any
            # other (a reload at the guard must not crash on it).
            reason = "no such file or directory" if error.errno == errno.ENOENT else error.strerror
            problems.append(Problem(str(path), 1, 1, f"cannot read it: {reason}"))
            continue
        if stat.S_ISDIR(status.st_mode):
            found, refused = _directory_files(path)
            files.extend(found)
            problems.extend(refused)
        elif stat.S_ISREG(status.st_mode):
            files.append(path)
        else:
            problems.append(Problem(str(path), 1, 1, "not a regular file or directory"))
    return PolicyFiles(tuple(files), tuple(problems))
