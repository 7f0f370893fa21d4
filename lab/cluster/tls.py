"""A self-signed certificate for serving the lab over HTTPS (the lab with RBAC on).

kubectl sends a bearer token only over TLS, so the lab that checks tokens must speak HTTPS.
The certificate is made at start-up by the ``openssl`` command (no Python crypto dependency),
for ``127.0.0.1`` and ``localhost``; kubeconfigs carry it as their certificate authority.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


class TlsUnavailable(RuntimeError):
    """No certificate could be made: the lab cannot serve HTTPS, so not with RBAC on."""


@dataclass(frozen=True)
class ServingCert:
    cert_pem: str
    context: ssl.SSLContext


def self_signed(host: str = "127.0.0.1") -> ServingCert:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise TlsUnavailable(
            "the lab with RBAC on serves HTTPS, and its certificate is made by the openssl "
            "command, which is not on PATH: install it (apt-get install openssl) or start the "
            "lab with --no-rbac"
        )
    with tempfile.TemporaryDirectory(prefix="stratus-lab-tls-") as folder:
        cert, key = Path(folder) / "cert.pem", Path(folder) / "key.pem"
        names = sorted({f"IP:{host}" if host[:1].isdigit() else f"DNS:{host}", "IP:127.0.0.1"})
        made = subprocess.run(
            [
                openssl,
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-days",
                "3650",
                "-subj",
                "/CN=stratus-lab",
                "-addext",
                f"subjectAltName={','.join([*names, 'DNS:localhost'])}",
                "-keyout",
                str(key),
                "-out",
                str(cert),
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        )
        if made.returncode != 0:
            last = (made.stderr.strip().splitlines() or ["no message"])[-1]
            raise TlsUnavailable(f"openssl could not make the lab's certificate: {last}")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        return ServingCert(cert.read_text(), context)
