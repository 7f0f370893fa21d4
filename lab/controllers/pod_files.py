"""A pod's volumes as real files, for the containers the lab runs as real processes.

A process cannot mount anything, so each volume becomes a directory under the lab's state
directory, written the way the kubelet writes it: ConfigMap, Secret, downward API and projected
volumes through an atomic writer (the files live in a timestamped directory that a ``..data``
symlink points at, and each visible name is a symlink through ``..data``), so a reader following
a policy file live never sees half an update; emptyDir is an empty directory of the pod; a
PersistentVolumeClaim is the directory of its bound PersistentVolume, which outlives the pod (a
new pod finds the database the old one wrote). The projected ServiceAccount token is a real
token of the lab for the pod's account, rotated when 80 % of its life has passed, as the
kubelet rotates it.

Where the container expects a file (``/var/lib/stratus/stratus.db``), the process gets the
mapped path instead: :func:`mounts` lists the container's mount points and :func:`rewrite`
maps a value that starts with one of them.
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.cluster.store import ObjectStore
from lab.controllers import downward_api

DATA_LINK = "..data"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
ROTATE_AT = 0.8  # the kubelet refreshes a projected token after 80 % of its life
DEFAULT_TOKEN_SECONDS = 3600

# (namespace, service account name, expiration seconds, audience) -> token
TokenIssuer = Callable[[str, str, int, str], str]


@dataclass
class IssuedToken:
    token: str
    issued_at: float
    seconds: int


def needs_rotation(issued: IssuedToken | None, now: float) -> bool:
    """Whether a projected token is due for a new one (none yet, or 80 % of its life gone)."""
    return issued is None or now - issued.issued_at >= issued.seconds * ROTATE_AT


def _decode(value: str) -> bytes:
    try:
        return base64.b64decode(value)
    except (binascii.Error, ValueError):
        return b""


def _object_files(
    obj: dict[str, Any] | None, items: list[dict[str, Any]] | None, *, secret: bool
) -> dict[str, bytes]:
    """The files of a ConfigMap or Secret source: every key, or the listed ``items``."""
    if obj is None:
        return {}
    data: dict[str, bytes] = {}
    for key, value in (obj.get("data") or {}).items():
        data[str(key)] = _decode(str(value)) if secret else str(value).encode()
    if not secret:
        for key, value in (obj.get("binaryData") or {}).items():
            data[str(key)] = _decode(str(value))
    if not items:
        return data
    return {
        str(i.get("path") or i.get("key")): data[i["key"]] for i in items if i.get("key") in data
    }


def _downward(
    store: ObjectStore, pod: dict[str, Any], items: list[dict[str, Any]]
) -> dict[str, bytes]:
    """A downward-API volume's files: each item's field, or its container's resource."""
    node = store.get("nodes", "", str((pod.get("spec") or {}).get("nodeName") or "")) or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    files: dict[str, bytes] = {}
    for item in items:
        path = str(item.get("path", ""))
        if item.get("fieldRef"):
            field_path = str(item["fieldRef"].get("fieldPath", ""))
            files[path] = downward_api.field_value(pod, field_path).encode()
        elif item.get("resourceFieldRef"):
            ref = item["resourceFieldRef"]
            value = downward_api.resource_value(pod, "", ref, allocatable)
            files[path] = value.encode()
    return files


@dataclass
class PodFiles:
    """The directories of one pod's volumes, kept in step with the objects they come from."""

    root: Path  # this pod's own directory
    volumes_root: Path  # where PersistentVolumes live (shared by every pod of the lab)
    dirs: dict[str, Path] = field(default_factory=dict)
    tokens: dict[tuple[str, str], IssuedToken] = field(default_factory=dict)

    def sync(
        self,
        store: ObjectStore,
        pod: dict[str, Any],
        *,
        issue_token: TokenIssuer,
        ca_pem: str | None,
        now: float | None = None,
    ) -> None:
        """Write every volume of the pod as it is now; unchanged volumes are left alone."""
        moment = time.time() if now is None else now
        namespace = pod["metadata"]["namespace"]
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            name = str(volume.get("name", ""))
            claim = volume.get("persistentVolumeClaim")
            if claim is not None:
                self.dirs[name] = self._claim_dir(store, namespace, claim)
                continue
            target = self.root / "volumes" / name
            self.dirs[name] = target
            files = self._files(store, pod, volume, issue_token, ca_pem, moment)
            if files is None:  # emptyDir and whatever else is just a directory of the pod
                target.mkdir(parents=True, exist_ok=True)
            else:
                atomic_write(target, files)

    def _claim_dir(self, store: ObjectStore, namespace: str, claim: dict[str, Any]) -> Path:
        name = str(claim.get("claimName", ""))
        pvc = store.get("persistentvolumeclaims", namespace, name) or {}
        bound = str((pvc.get("spec") or {}).get("volumeName") or "")
        # Unbound (the lab binds before the pod starts): the claim's own directory.
        folder = self.volumes_root / (bound or f"claim-{namespace}-{name}")
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def _files(
        self,
        store: ObjectStore,
        pod: dict[str, Any],
        volume: dict[str, Any],
        issue_token: TokenIssuer,
        ca_pem: str | None,
        now: float,
    ) -> dict[str, bytes] | None:
        namespace = pod["metadata"]["namespace"]
        if "configMap" in volume:
            source = volume["configMap"] or {}
            obj = store.get("configmaps", namespace, str(source.get("name", "")))
            return self._configmap(obj, source.get("items"), ca_pem)
        if "secret" in volume:
            source = volume["secret"] or {}
            obj = store.get("secrets", namespace, str(source.get("secretName", "")))
            return _object_files(obj, source.get("items"), secret=True)
        if "downwardAPI" in volume:
            items = (volume["downwardAPI"] or {}).get("items") or []
            return _downward(store, pod, items)
        if "projected" not in volume:
            return None
        files: dict[str, bytes] = {}
        for source in (volume["projected"] or {}).get("sources") or []:
            if "serviceAccountToken" in source:
                files.update(
                    self._token(pod, volume, source["serviceAccountToken"], issue_token, now)
                )
            elif "configMap" in source:
                ref = source["configMap"] or {}
                obj = store.get("configmaps", namespace, str(ref.get("name", "")))
                files.update(self._configmap(obj, ref.get("items"), ca_pem))
            elif "secret" in source:
                ref = source["secret"] or {}
                obj = store.get("secrets", namespace, str(ref.get("name", "")))
                files.update(_object_files(obj, ref.get("items"), secret=True))
            elif "downwardAPI" in source:
                items = (source["downwardAPI"] or {}).get("items") or []
                files.update(_downward(store, pod, items))
        return files

    @staticmethod
    def _configmap(
        obj: dict[str, Any] | None, items: list[dict[str, Any]] | None, ca_pem: str | None
    ) -> dict[str, bytes]:
        files = _object_files(obj, items, secret=False)
        if ca_pem and obj is not None and obj["metadata"]["name"] == ROOT_CA_CONFIGMAP:
            # The CA a pod verifies the API server with is the certificate the lab serves.
            files = {path: ca_pem.encode() for path in files}
        return files

    def _token(
        self,
        pod: dict[str, Any],
        volume: dict[str, Any],
        source: dict[str, Any],
        issue_token: TokenIssuer,
        now: float,
    ) -> dict[str, bytes]:
        path = str(source.get("path") or "token")
        key = (str(volume.get("name", "")), path)
        issued = self.tokens.get(key)
        if needs_rotation(issued, now):
            seconds = int(source.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS)
            account = str((pod.get("spec") or {}).get("serviceAccountName") or "default")
            token = issue_token(
                pod["metadata"]["namespace"], account, seconds, str(source.get("audience") or "")
            )
            issued = IssuedToken(token, now, seconds)
            self.tokens[key] = issued
        assert issued is not None
        return {path: issued.token.encode()}

    def remove(self) -> None:
        """The pod is gone: its own directories go (PersistentVolumes stay)."""
        shutil.rmtree(self.root, ignore_errors=True)


def volume_contents(
    store: ObjectStore, pod: dict[str, Any], volume: dict[str, Any]
) -> dict[str, bytes] | None:
    """The files of one volume as the kubelet writes them (None: a directory, an emptyDir),
    for a command run inside the container; its token is a placeholder, not a credential."""
    unused = Path("/nonexistent")
    return PodFiles(root=unused, volumes_root=unused)._files(
        store, pod, volume, lambda *_: "lab-exec-token", None, time.time()
    )


def _current(directory: Path) -> dict[str, bytes] | None:
    data = directory / DATA_LINK
    if not data.is_dir():
        return None
    return {
        str(path.relative_to(data)): path.read_bytes()
        for path in sorted(data.rglob("*"))
        if path.is_file()
    }


def safe_path(relative: str) -> bool:
    """A file path a volume may hold: relative, inside the volume (as the API validates)."""
    parts = Path(relative).parts
    return bool(parts) and not Path(relative).is_absolute() and ".." not in parts


def atomic_write(directory: Path, files: dict[str, bytes]) -> bool:
    """Write ``files`` (relative path → content) as the kubelet's atomic writer does; returns
    whether anything changed. Readers see the old set or the new one, never a mixture: the new
    files go into a fresh ``..<timestamp>`` directory and the ``..data`` link swaps at once."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {path: content for path, content in files.items() if safe_path(path)}
    if _current(directory) == files:
        return False
    stamp = f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{secrets.token_hex(4)}"
    staged = directory / stamp
    staged.mkdir()
    for relative, content in files.items():
        target = staged / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    link = directory / f"{DATA_LINK}_tmp"
    link.unlink(missing_ok=True)
    link.symlink_to(stamp)
    os.replace(link, directory / DATA_LINK)
    visible = {relative.split("/", 1)[0] for relative in files}
    for name in visible:
        entry = directory / name
        if not entry.is_symlink():
            entry.symlink_to(f"{DATA_LINK}/{name}")
    for entry in directory.iterdir():
        if entry.name.startswith(".."):
            if entry.name not in (DATA_LINK, stamp) and entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
        elif entry.name not in visible and entry.is_symlink():
            entry.unlink()
    return True


def mounts(container: dict[str, Any], dirs: dict[str, Path]) -> list[tuple[str, Path]]:
    """The container's mount points and the directories (or files, with ``subPath``) they are
    on this machine, longest mount path first so the most specific one wins."""
    found: list[tuple[str, Path]] = []
    for mount in container.get("volumeMounts") or []:
        folder = dirs.get(str(mount.get("name", "")))
        path = str(mount.get("mountPath", "")).rstrip("/")
        if folder is None or not path:
            continue
        sub = str(mount.get("subPath") or "")
        found.append((path, folder / sub if sub else folder))
    return sorted(found, key=lambda m: len(m[0]), reverse=True)


def rewrite(value: str, mapped: list[tuple[str, Path]]) -> str:
    """``value`` with a leading container path (``/var/lib/stratus/x.db``) replaced by the
    directory its volume is mapped to; any other value unchanged."""
    for path, folder in mapped:
        if value == path:
            return str(folder)
        if value.startswith(path + "/"):
            return str(folder) + value[len(path) :]
    return value
