"""The files a container sees, for ``kubectl exec`` and for the container's own command: the
image's few files, and the pod's volumes at their mount paths, with the contents the kubelet
would have written.

ConfigMap, Secret, downward-API and projected volumes are read from the objects when the
command starts (what a real kubelet shows a minute later at most); an emptyDir lives as long
as the pod and is shared by its containers, so a file one container writes is there for the
others; everything else a command writes stays in that container's own layer.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lab.cluster.store import ObjectStore
from lab.controllers import image_filesystems, pod_etc, pod_files

ROOT_DIRS = ("bin", "dev", "etc", "home", "proc", "root", "sys", "tmp", "usr", "var")


@dataclass
class Layer:
    """A writable tree of files: a container's own layer, or one emptyDir of a pod."""

    files: dict[str, bytes] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=lambda: {"/"})
    # When each file was last written (seconds since the epoch), for ``ls -l``; a file the
    # image or the kubelet put there has none and shows the image's build date.
    times: dict[str, float] = field(default_factory=dict)


@dataclass
class ContainerFiles:
    """Paths to contents, across the image, the mounts and the writable layers."""

    base: Layer
    mounts: list[tuple[str, Layer, bool]] = field(default_factory=list)  # (path, layer, writable)

    def _locate(self, path: str) -> tuple[Layer, str, bool]:
        path = posixpath.normpath(path)
        for mount, layer, writable in sorted(self.mounts, key=lambda m: -len(m[0])):
            if path == mount or path.startswith(mount.rstrip("/") + "/"):
                inner = "/" + path[len(mount) :].lstrip("/")
                return layer, posixpath.normpath(inner), writable
        return self.base, path, True

    def read(self, path: str) -> bytes | None:
        layer, inner, _ = self._locate(path)
        return layer.files.get(inner)

    def is_dir(self, path: str) -> bool:
        path = posixpath.normpath(path)
        if any(m == path for m, _, _ in self.mounts):
            return True
        layer, inner, _ = self._locate(path)
        return inner in layer.dirs

    def exists(self, path: str) -> bool:
        return self.read(path) is not None or self.is_dir(path)

    def write(self, path: str, data: bytes, *, append: bool = False) -> str | None:
        """Write a file; the error text when it cannot be written."""
        layer, inner, writable = self._locate(path)
        if not writable:
            return "Read-only file system"
        parent = posixpath.dirname(inner)
        if parent not in layer.dirs:
            return "No such file or directory"
        layer.files[inner] = (layer.files.get(inner, b"") if append else b"") + data
        layer.times[inner] = time.time()
        return None

    def modified(self, path: str) -> float | None:
        layer, inner, _ = self._locate(path)
        return layer.times.get(inner)

    def writable(self, path: str) -> bool:
        return self._locate(path)[2]

    def mkdir(self, path: str, *, parents: bool = False) -> str | None:
        layer, inner, writable = self._locate(path)
        if not writable:
            return "Read-only file system"
        chain = [inner]
        while parents and posixpath.dirname(chain[-1]) not in layer.dirs:
            chain.append(posixpath.dirname(chain[-1]))
        if posixpath.dirname(chain[-1]) not in layer.dirs:
            return "No such file or directory"
        now = time.time()
        layer.times.update((d, now) for d in chain if d not in layer.dirs)
        layer.dirs.update(chain)
        return None

    def remove(self, path: str) -> bool:
        layer, inner, writable = self._locate(path)
        if not writable:
            return False
        layer.times.pop(inner, None)
        return layer.files.pop(inner, None) is not None

    def rmdir(self, path: str) -> bool:
        """Remove a directory and everything under it (``rm -r``)."""
        layer, inner, writable = self._locate(path)
        if not writable or inner not in layer.dirs or inner == "/":
            return False
        prefix = inner.rstrip("/") + "/"
        for name in [f for f in layer.files if f.startswith(prefix)]:
            del layer.files[name]
            layer.times.pop(name, None)
        layer.dirs -= {d for d in layer.dirs if d == inner or d.startswith(prefix)}
        return True

    def listing(self, path: str) -> list[str]:
        """The names in a directory, sorted as ``ls`` prints them."""
        path = posixpath.normpath(path)
        names: set[str] = set()
        layer, inner, _ = self._locate(path)
        prefix = inner.rstrip("/") + "/"
        for entry in [*layer.files, *layer.dirs]:
            if entry.startswith(prefix) and entry != inner:
                names.add(entry[len(prefix) :].split("/", 1)[0])
        for mount, _, _ in self.mounts:
            if posixpath.dirname(mount) == path:
                names.add(posixpath.basename(mount))
        return sorted(n for n in names if n)

    def walk(self, path: str) -> list[str]:
        """Every file under ``path`` (or ``path`` itself when it is a file)."""
        if self.read(path) is not None:
            return [posixpath.normpath(path)]
        found: list[str] = []
        for name in self.listing(path):
            child = posixpath.join(path, name)
            found.extend(self.walk(child) if self.is_dir(child) else [child])
        return found


def image_layer(pod: dict[str, Any], stock: image_filesystems.Tree, dns_ip: str) -> Layer:
    """A container's own layer at its start: the image's files (``stock``) and the ones the
    kubelet writes into every container of the pod (``pod_etc``)."""
    layer = Layer()
    layer.dirs.update(f"/{d}" for d in ROOT_DIRS)
    layer.dirs.update({"/usr/bin", "/usr/local", "/usr/local/bin", "/var/run", "/var/log"})
    files = {
        "/etc/hostname": pod_etc.hostname(pod) + "\n",
        "/etc/hosts": pod_etc.hosts(pod),
        "/etc/resolv.conf": pod_etc.resolv_conf(pod, dns_ip),
        "/etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n",
        "/etc/os-release": 'NAME="Stratus lab"\nID=lab\n',
        **stock.files,
    }
    for path, text in files.items():
        layer.files[path] = text.encode()
        _add_parents(layer, posixpath.dirname(path))
    for path in stock.dirs:
        _add_parents(layer, path)
    return layer


# kube-dns's ClusterIP in a default cluster (exec_network.DNS_SERVER; that module serves
# files' readers, so it cannot be imported here).
DEFAULT_DNS_IP = "10.96.0.10"


def bare_layer(pod_name: str) -> Layer:
    """A layer for a run with no pod behind it (a pure plan): no image files, only the
    kubelet's, for a pod of this name."""
    pod = {"metadata": {"name": pod_name, "namespace": "default"}, "spec": {}, "status": {}}
    return image_layer(pod, image_filesystems.Tree(), DEFAULT_DNS_IP)


def _add_parents(layer: Layer, path: str) -> None:
    while path not in layer.dirs:
        layer.dirs.add(path)
        path = posixpath.dirname(path)


def volume_layers(
    store: ObjectStore,
    pod: dict[str, Any],
    empty_dirs: dict[str, Layer],
) -> dict[str, tuple[Layer, bool]]:
    """Each volume of the pod as a layer (and whether it is writable); ``empty_dirs`` holds
    the pod's emptyDirs, which outlive one command."""
    layers: dict[str, tuple[Layer, bool]] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        name = str(volume.get("name", ""))
        contents = pod_files.volume_contents(store, pod, volume)
        if contents is None:
            layers[name] = (empty_dirs.setdefault(name, Layer()), True)
            continue
        layer = Layer()
        for relative, data in contents.items():
            path = posixpath.normpath("/" + relative)
            layer.files[path] = data
            parent = posixpath.dirname(path)
            while parent not in layer.dirs:
                layer.dirs.add(parent)
                parent = posixpath.dirname(parent)
        layers[name] = (layer, False)
    return layers


def container_files(
    store: ObjectStore,
    pod: dict[str, Any],
    container: dict[str, Any],
    own: Layer,
    empty_dirs: dict[str, Layer],
) -> ContainerFiles:
    layers = volume_layers(store, pod, empty_dirs)
    files = ContainerFiles(base=own)
    for mount in container.get("volumeMounts") or []:
        found = layers.get(str(mount.get("name", "")))
        if found is None:
            continue
        layer, writable = found
        sub = str(mount.get("subPath") or "")
        path = posixpath.normpath(str(mount.get("mountPath", "/")))
        if sub and layer.files.get("/" + sub) is not None:  # one file of the volume
            own.files[path] = layer.files["/" + sub]
            continue
        files.mounts.append((path, layer, writable and not mount.get("readOnly")))
        parent = posixpath.dirname(path)
        while parent not in own.dirs:
            own.dirs.add(parent)
            parent = posixpath.dirname(parent)
    return files


@dataclass
class WritableLayers:
    """What the containers of every pod have written, shared by ``kubectl exec`` and the
    containers' own commands (an init container's ``echo hi > /work/motd`` is there for the
    main container and for ``exec``): each container's own layer, which a restart replaces
    as a new container gets a new one, and each pod's emptyDirs, which live as long as the pod.
    """

    own: dict[tuple[str, str], Layer] = field(default_factory=dict)  # (pod uid, container)
    # A new container's own layer (its image's files): set by the exec sessions, which know
    # the image catalog; without it, the files the kubelet writes alone.
    stock: Callable[[dict[str, Any], dict[str, Any]], Layer] | None = None
    empty_dirs: dict[str, dict[str, Layer]] = field(default_factory=dict)  # pod uid -> volume
    _opened: int = 0

    def files(
        self,
        store: ObjectStore,
        pod: dict[str, Any],
        container: dict[str, Any],
        *,
        fresh: bool = False,
    ) -> ContainerFiles:
        """The container's view; ``fresh`` when the container starts (a new own layer)."""
        uid = str(pod["metadata"].get("uid", ""))
        name = str(container.get("name", ""))
        self._opened += 1
        if self._opened % 256 == 0:  # now and then, let the layers of deleted pods go
            self.forget_gone({str(p["metadata"].get("uid")) for p in store.iter_all("pods")})
        own = None if fresh else self.own.get((uid, name))
        if own is None:
            own = self.own[(uid, name)] = (
                self.stock(pod, container)
                if self.stock is not None
                else image_layer(pod, image_filesystems.Tree(), DEFAULT_DNS_IP)
            )
        return container_files(store, pod, container, own, self.empty_dirs.setdefault(uid, {}))

    def forget_gone(self, live: set[str]) -> None:
        """Drop the layers of pods that no longer exist (``live``: the uids that do)."""
        for key in [k for k in self.own if k[0] not in live]:
            del self.own[key]
        for uid in [u for u in self.empty_dirs if u not in live]:
            del self.empty_dirs[uid]

    def clear(self) -> None:
        self.own.clear()
        self.empty_dirs.clear()
