"""The policy in force, reloaded when its files change.

At start-up an invalid directory raises (the bot does not start: fail closed). Later, a change
that does not load keeps the last good policy, and the error is reported through ``on_error``
(the bot logs it and writes it to the audit log).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from policies.evaluate import CompiledPolicy
from policies.files import find_policy_files
from policies.loader import MAX_FILE_BYTES, PolicyError, Problem, load
from store.audit import AuditLog
from store.db import Store
from store.errors import Remedy, StratusError

log = logging.getLogger("stratus.policies")
ENV = "STRATUS_POLICY_DIR"

# A file's identity and change stamps (with a digest of its content while it is recent), or the
# error that hid it (it vanished mid-scan).
Stamp = (
    tuple[str, int, int, int, int, int] | tuple[str, int, int, int, int, int, str] | tuple[str, str]
)
# A file changed this recently may change again within one tick of the file system's clock
# (a few milliseconds) with the same size: its content is compared too, not only its stamp.
RECENT_NS = 2_000_000_000
Fingerprint = tuple[tuple[Stamp, ...], tuple[str, ...]]


class PolicyDirError(StratusError):
    """``STRATUS_POLICY_DIR`` is set but names nothing: fail closed, never "no policy"."""

    code = "policy_dir"
    default_remedy = Remedy.FIX_CONFIG


def default_directory() -> Path | None:
    """``$STRATUS_POLICY_DIR``; unset means "no policy: ask for everything". Set but empty (or
    blank) is a mistake — an unexpanded shell variable, a blank line in an env file — and is
    refused: read as "no policy" it would drop every deny rule."""
    if ENV not in os.environ:
        return None
    value = os.environ[ENV]
    if not value.strip():
        raise PolicyDirError(
            f"{ENV} is set but empty ({value!r}); set it to the policy directory, or unset it "
            "to run with no policy (every write asked for)"
        )
    return Path(value)


def audit_reporter(store: Store, actor: str = "stratus-policy") -> Callable[[PolicyError], None]:
    """An ``on_error`` that writes each rejected policy change to the audit log."""
    audit = AuditLog(store)

    def report(error: PolicyError) -> None:
        audit.append(
            actor=actor,
            event="policy-rejected",
            subject="policy",
            payload={"problems": [str(p) for p in error.problems]},
        )

    return report


class PolicyWatcher:
    def __init__(
        self, directory: Path | None, *, on_error: Callable[[PolicyError], None] | None = None
    ) -> None:
        self.directory = directory
        self.on_error = on_error
        self._fingerprint = self._scan()
        self.current = self._load()  # raises PolicyError: fail closed at start-up
        self.last_error: PolicyError | None = None

    def _scan(self) -> Fingerprint:
        """What a reload depends on: the files ``load`` reads and the entries it refuses, so
        a directory that turns empty or gains a stray file is reloaded (and rejected)."""
        if self.directory is None:
            return ((), ())
        found = find_policy_files([self.directory])
        return tuple(_stamp(f) for f in found.files), tuple(str(p) for p in found.problems)

    def _load(self) -> CompiledPolicy:
        paths = [self.directory] if self.directory is not None else []
        return CompiledPolicy.build(load(paths))

    def _unreadable(self, failure: Exception) -> PolicyError:
        log.error("reading the policy failed", exc_info=failure)
        where = str(self.directory) if self.directory is not None else "policy"
        reason = f"the files could not be read ({type(failure).__name__}: {failure})"
        return PolicyError([Problem(where, 1, 1, reason)])

    def refresh(self) -> bool:
        """Reload if a file changed; returns True when a new policy is in force."""
        fingerprint = self._scan()
        if fingerprint == self._fingerprint:
            return False
        self._fingerprint = fingerprint
        try:
            self.current = self._load()
        except Exception as failure:
            # A reload runs at the guard, between approval and write: whatever goes wrong in
            # reading the files rejects the change like a bad file, and never crashes the
            # write it guards (which would leave the proposal executing).
            error = failure if isinstance(failure, PolicyError) else self._unreadable(failure)
            self.last_error = error
            log.error("policy change rejected, keeping the last good policy:\n%s", error)
            if self.on_error is not None:
                self.on_error(error)
            return False
        self.last_error = None
        log.info("policy reloaded: %d rules", len(self.current.policy.rules))
        return True


def _stamp(path: Path) -> Stamp:
    """What tells a changed file from the one that was loaded, with one ``stat``.

    The modification time alone is not enough: ``cp -p``, ``touch -r`` or ``os.utime`` set it
    back, so a same-size rewrite can keep size, inode and mtime. The change time (ctime) is
    set by the kernel on every write and metadata change and no user can set it back. The
    device and inode change when a ConfigMap volume swaps its ``..data`` link or a link is
    pointed elsewhere, even if everything else happens to match."""
    try:
        status = path.stat()
        stamp = (
            str(path),
            status.st_dev,
            status.st_ino,
            status.st_mtime_ns,
            status.st_ctime_ns,
            status.st_size,
        )
        # Two writes within one tick of the file system's clock leave the same stamps: a
        # file whose latest change (either time) is recent is compared by content too.
        changed = max(status.st_mtime_ns, status.st_ctime_ns)
        if time.time_ns() - changed >= RECENT_NS:
            return stamp
        with path.open("rb") as stream:
            content = stream.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        return (str(path), str(error))
    return (*stamp, hashlib.blake2b(content).hexdigest())


class LivePolicy:
    """The policy in force for a long-running process, as a callable the proposal service and
    the bot share: each call looks at the files (a few ``stat`` calls; by default every call,
    at most once per ``interval`` seconds if one is given) and reloads them when they changed.
    So the guard right before a write sees a deny rule written a moment before the person
    answered, a rule added while the bot runs decides the next proposal, and ``/stratus
    policy`` shows what is enforced. The first call
    loads the directory and raises when it is invalid (fail closed); a later bad change keeps
    the last good policy and is reported (``last_error``, ``on_error``)."""

    def __init__(
        self,
        directory: Path | None,
        *,
        interval: float = 0.0,
        on_error: Callable[[PolicyError], None] | None = None,
    ) -> None:
        self.directory = directory
        self.interval = interval
        self.on_error = on_error
        self._watcher: PolicyWatcher | None = None
        self._checked = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> CompiledPolicy:
        with self._lock:
            if self._watcher is None:
                self._watcher = PolicyWatcher(self.directory, on_error=self.on_error)
                self._checked = time.monotonic()
            elif time.monotonic() - self._checked >= self.interval:
                self._watcher.refresh()
                self._checked = time.monotonic()
            return self._watcher.current

    @property
    def last_error(self) -> PolicyError | None:
        """Why the latest change of the files was rejected (None: the files are in force)."""
        return self._watcher.last_error if self._watcher is not None else None
