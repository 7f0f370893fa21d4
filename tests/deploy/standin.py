"""A local stand-in for ``python:3.11.7-slim-bookworm``, made without a registry.

The image the Dockerfile names comes from Docker Hub, which this machine cannot reach. What
that image is — Debian bookworm's essential packages with CPython 3.11.7 built into
``/usr/local`` — this machine already has: it runs bookworm, and pyenv's 3.11.7 is on disk. So
the stand-in is assembled from them into an empty buildah container (``buildah from
scratch``): every file of the installed Essential packages, ``libc6``, ``passwd`` (for the
Dockerfile's ``groupadd``/``useradd``) and what those depend on, as ``dpkg -L`` lists them
(without documentation, as the slim image has none); the interpreter copied into
``/usr/local`` without the host's site-packages, tests or byte code, as the official image
removes them; the shared libraries its extension modules load and the packages that own them;
``/etc/passwd`` and ``/etc/group`` from base-passwd's masters; ``ld.so.cache`` made for
``/usr/local/lib``. It is not the official image byte for byte (other package builds of the
same release, no ca-certificates), but it is the same release of Debian and of Python, at the
same paths, with the same tools the Dockerfile's steps use.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

PYTHON_VERSION = "3.11.7"
PYTHON_HOME = Path.home() / ".pyenv" / "versions" / PYTHON_VERSION
# Seeds besides the Essential packages; what they depend on is followed.
SEEDS = ("libc6", "passwd", "netbase", "tzdata")
# What the slim image leaves out, and what a stand-in must not take from this host.
SKIPPED = re.compile(r"^/usr/share/(doc|man|info|locale|lintian|linda|bug)(/|$)")
PYTHON_SKIPPED = re.compile(
    r"(^|/)(test|tests|idle_test|__pycache__|site-packages|tkinter|idlelib|turtledemo)(/|$)"
    r"|\.pyc$|\.a$|_tkinter\.|python3\.11-gdb\.py$"
)
# The interpreter's own programs in bin/; the rest of pyenv's bin/ is the host's pip installs.
PYTHON_PROGRAMS = re.compile(r"^(python|pydoc|idle|2to3)[\d.]*(-config)?$")
LDD_PATH = re.compile(r"=> (/\S+)|^\s*(/\S+) \(")


def buildah_missing() -> str | None:
    """Why the image cannot be built here, or None when it can."""
    if shutil.which("buildah") is None:
        return "buildah is not installed (scripts/setup installs Debian's package)"
    if os.geteuid() != 0:
        return "buildah's vfs storage and chroot isolation need root here"
    if not (PYTHON_HOME / "bin" / "python3").exists():
        return f"no CPython {PYTHON_VERSION} at {PYTHON_HOME} to make the stand-in base from"
    if shutil.which("dpkg-query") is None:
        return "not a Debian host: the stand-in base is made from its installed packages"
    return None


class Buildah:
    """``buildah`` with its storage (vfs) under one temporary directory."""

    def __init__(self, state: Path, driver: str = "vfs") -> None:
        self.prefix = [
            "buildah",
            "--root",
            str(state / "root"),
            "--runroot",
            str(state / "runroot"),
            "--storage-driver",
            driver,
        ]
        self.env = {**os.environ, "BUILDAH_ISOLATION": "chroot", "STORAGE_DRIVER": driver}

    def __call__(self, *args: str, timeout: float = 300) -> str:
        done = subprocess.run(
            [*self.prefix, *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0:
            raise AssertionError(
                f"buildah {' '.join(args)} exited {done.returncode}:\n"
                f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
            )
        return done.stdout


def _installed() -> dict[str, tuple[str, str, str, str]]:
    """Installed packages: name → (essential, pre-depends, depends, provides)."""
    out = subprocess.run(
        [
            "dpkg-query",
            "-W",
            "-f=${Package}\t${db:Status-Abbrev}\t${Essential}\t"
            "${Pre-Depends}\t${Depends}\t${Provides}\n",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    packages: dict[str, tuple[str, str, str, str]] = {}
    for line in out.splitlines():
        name, status, essential, pre, depends, provides = line.split("\t")
        if status.startswith("ii"):
            packages[name] = (essential, pre, depends, provides)
    return packages


def _names(field: str) -> list[list[str]]:
    """A Depends field as alternatives: ``a (>= 1), b | c:any`` → [[a], [b, c]]."""
    groups = []
    for group in field.split(","):
        names = [re.split(r"[\s:(]", alt.strip(), maxsplit=1)[0] for alt in group.split("|")]
        if names and names[0]:
            groups.append(names)
    return groups


def packages(extra: Iterable[str] = ()) -> set[str]:
    """The Essential packages, the seeds and ``extra``, closed over (Pre-)Depends among the
    installed packages (a virtual name is met by an installed package providing it)."""
    installed = _installed()
    providers: dict[str, str] = {}
    for name, (_, _, _, provides) in installed.items():
        for virtual, *_ in _names(provides):
            providers.setdefault(virtual, name)
    wanted = [n for n, (essential, *_) in installed.items() if essential == "yes"]
    wanted += [n for n in (*SEEDS, *extra) if n in installed]
    chosen: set[str] = set()
    while wanted:
        name = wanted.pop()
        if name in chosen:
            continue
        chosen.add(name)
        _, pre, depends, _ = installed[name]
        for alternatives in _names(pre) + _names(depends):
            met = [a for a in alternatives if a in installed] or [
                providers[a] for a in alternatives if a in providers
            ]
            if met:
                wanted.append(met[0])
    return chosen


def _files(names: Sequence[str]) -> list[str]:
    out = subprocess.run(
        ["dpkg-query", "-L", *sorted(names)], capture_output=True, text=True, check=True
    ).stdout
    return sorted({line for line in out.splitlines() if line.startswith("/")})


def _copy(source: Path, target: Path) -> None:
    """One path of the host into the root filesystem at ``target``: a directory made, a
    symbolic link recreated as a link, a file copied with its mode. What is already there
    (a directory two packages list, /lib through the merged-/usr link) is kept."""
    if os.path.lexists(target):
        return
    if source.is_symlink():
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.readlink(source), target)
    elif source.is_dir():
        target.mkdir(parents=True, exist_ok=True)
        shutil.copymode(source, target)
    elif source.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def _libraries(elves: Iterable[Path]) -> set[str]:
    """The shared libraries (host paths) that ``elves`` load, as ldd resolves them."""
    found: set[str] = set()
    for elf in elves:
        done = subprocess.run(["ldd", str(elf)], capture_output=True, text=True, check=False)
        for line in done.stdout.splitlines():
            match = LDD_PATH.search(line)
            if match:
                found.add(match[1] or match[2])
    return found


def _owners(paths: Iterable[str]) -> set[str]:
    """The packages owning ``paths``. dpkg knows a library by the path its package ships it
    at, /lib or /usr/lib (merged /usr made them one), and by its real name or its soname."""
    queries: set[str] = set()
    for path in paths:
        for name in (path, os.path.realpath(path)):
            queries.add(name)
            queries.add(name[4:] if name.startswith("/usr/") else "/usr" + name)
    if not queries:
        return set()
    done = subprocess.run(
        ["dpkg-query", "-S", *sorted(queries)], capture_output=True, text=True, check=False
    )
    owners: set[str] = set()
    for line in done.stdout.splitlines():
        names, _, _ = line.partition(": ")
        owners.update(name.split(":")[0].strip() for name in names.split(","))
    return owners


def populate(rootfs: Path) -> None:
    """Fill an empty directory with the stand-in's root filesystem."""
    for top in ("bin", "lib", "lib64", "sbin"):  # bookworm's merged /usr
        (rootfs / "usr" / top).mkdir(parents=True, exist_ok=True)
        (rootfs / top).symlink_to(f"usr/{top}")
    for directory, mode in (("tmp", 0o1777), ("var/tmp", 0o1777), ("root", 0o700)):
        (rootfs / directory).mkdir(parents=True, exist_ok=True)
        (rootfs / directory).chmod(mode)
    for directory in ("proc", "sys", "dev", "run", "etc", "usr/local/bin", "usr/local/lib"):
        (rootfs / directory).mkdir(parents=True, exist_ok=True)

    # CPython into /usr/local, as the official image installs it.
    for source in sorted(PYTHON_HOME.rglob("*")):
        relative = source.relative_to(PYTHON_HOME)
        if PYTHON_SKIPPED.search(relative.as_posix()):
            continue
        if relative.parts[0] == "bin" and (
            len(relative.parts) > 1 and not PYTHON_PROGRAMS.match(relative.parts[1])
        ):
            continue
        _copy(source, rootfs / "usr" / "local" / relative)
    site = rootfs / "usr/local/lib/python3.11/site-packages"
    site.mkdir(parents=True, exist_ok=True)
    # pip and setuptools as the image has them: the wheels ensurepip bundles, unpacked.
    for wheel in sorted((PYTHON_HOME / "lib/python3.11/ensurepip/_bundled").glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)

    # Debian: the packages and the libraries Python's extension modules load.
    python_elves = [
        PYTHON_HOME / "bin" / "python3.11",
        *(
            p
            for p in (PYTHON_HOME / "lib/python3.11/lib-dynload").glob("*.so")
            if not PYTHON_SKIPPED.search(p.name)
        ),
    ]
    libraries = {lib for lib in _libraries(python_elves) if not lib.startswith(str(PYTHON_HOME))}
    chosen = packages(_owners(libraries))
    for path in _files(sorted(chosen)):
        if SKIPPED.match(path):
            continue
        _copy(Path(path), rootfs / path.lstrip("/"))
    for lib in sorted(libraries):  # any library dpkg does not know of, and its real file
        for path in (lib, os.path.realpath(lib)):
            _copy(Path(path), rootfs / path.lstrip("/"))

    # The users and groups of a fresh Debian system, and the dynamic loader's cache.
    share = Path("/usr/share/base-passwd")
    for name, master in (("passwd", "passwd.master"), ("group", "group.master")):
        # The masters hold "*" where an installed system holds "x" (the hash is in shadow).
        entries = [line.split(":") for line in (share / master).read_text().splitlines()]
        (rootfs / "etc" / name).write_text(
            "".join(":".join([e[0], "x", *e[2:]]) + "\n" for e in entries if e[0])
        )
        shadow = "shadow" if name == "passwd" else "gshadow"
        line = "{}:*:19000:0:99999:7:::\n" if name == "passwd" else "{}:*::\n"
        (rootfs / "etc" / shadow).write_text("".join(line.format(e[0]) for e in entries if e[0]))
        (rootfs / "etc" / shadow).chmod(0o640)
    subprocess.run(["ldconfig", "-r", str(rootfs)], check=True, capture_output=True)


def make_base(buildah: Buildah, name: str) -> None:
    """Commit the stand-in as the local image ``name``."""
    container = buildah("from", "scratch").strip()
    try:
        mount = Path(buildah("mount", container).strip())
        populate(mount)
        buildah(
            "config",
            "--env",
            "PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--env",
            "LANG=C.UTF-8",
            "--env",
            f"PYTHON_VERSION={PYTHON_VERSION}",
            "--cmd",
            "python3",
            "--os",
            "linux",
            "--arch",
            "amd64",
            container,
        )
        buildah("commit", "--quiet", "--rm", container, name)
    except BaseException:
        subprocess.run([*buildah.prefix, "rm", container], capture_output=True, check=False)
        raise
