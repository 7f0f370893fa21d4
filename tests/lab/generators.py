"""The ``kubectl create`` generators the kubectl tests run, and the files some of them read."""

from __future__ import annotations

import subprocess
from pathlib import Path

# Each command may name FILE (a data file), CERT and KEY (a PEM pair): see :func:`with_files`.
GENERATORS: list[list[str]] = [
    ["create", "deployment", "web", "--image=nginx:1.27", "--replicas=2", "--port=80"],
    ["create", "deployment", "idle", "--image=nginx", "--replicas=0"],
    ["create", "configmap", "settings", "--from-literal=mode=fast", "--from-file=FILE"],
    ["create", "secret", "generic", "creds", "--from-literal=password=s3cret"],
    ["create", "secret", "tls", "cert", "--cert=CERT", "--key=KEY"],
    [
        "create",
        "secret",
        "docker-registry",
        "pull",
        "--docker-server=registry.example.com",
        "--docker-username=u",
        "--docker-password=p",
    ],
    ["create", "service", "clusterip", "web", "--tcp=80:8080"],
    ["create", "service", "nodeport", "np", "--tcp=80:8080"],
    ["create", "service", "loadbalancer", "lb", "--tcp=443:8443"],
    ["create", "service", "externalname", "ext", "--external-name=example.com"],
    ["create", "serviceaccount", "robot"],
    ["create", "quota", "small", "--hard=pods=10,requests.cpu=2,requests.memory=1Gi"],
]
CREATED = [
    "deployment.apps/web",
    "deployment.apps/idle",
    "configmap/settings",
    "secret/creds",
    "secret/cert",
    "secret/pull",
    "service/web",
    "service/np",
    "service/lb",
    "service/ext",
    "serviceaccount/robot",
    "resourcequota/small",
]


def with_files(folder: Path) -> list[list[str]]:
    """The generators with FILE, CERT and KEY replaced by files made in ``folder``."""
    cert, key, data = folder / "tls.crt", folder / "tls.key", folder / "app.conf"
    if not cert.exists():
        subprocess.run(
            [
                *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=lab"),
                *("-days", "1", "-keyout", str(key), "-out", str(cert)),
            ],
            check=True,
            capture_output=True,
        )
        data.write_text("workers = 4\n")
    files = {"FILE": str(data), "CERT": str(cert), "KEY": str(key)}
    return [[_fill(arg, files) for arg in command] for command in GENERATORS]


def _fill(arg: str, files: dict[str, str]) -> str:
    for placeholder, path in files.items():
        arg = arg.replace(f"={placeholder}", f"={path}")
    return arg
