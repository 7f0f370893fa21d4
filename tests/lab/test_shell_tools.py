"""The everyday applets inside ``kubectl exec … sh -c`` as an SRE types them (through the
system kubectl and 1.20): checksums that match the host's, ``wc``/``awk``/``cut``/``sort``/
``uniq``/``tr`` pipelines, ``ls -la`` with modes, sizes and dates, and the file applets, over
a file restored with ``kubectl cp``. The pure cases are in ``test_shell_tools_pure.py``."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Kubectl, Lab, kubectl_for

POD = """
apiVersion: v1
kind: Pod
metadata: {name: store}
spec:
  containers:
  - name: store
    image: alpine:3.20
    command: [sleep, "3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
"""
SEED = b"id,name\n1,alpha\n2,beta\n3,beta\n"


@pytest.fixture(params=["system", "1.20"])
def kubectl(request: pytest.FixtureRequest, lab: Lab, tmp_path: Path) -> Kubectl:
    found = kubectl_for(request.param, lab, tmp_path)
    found.run("apply", "-f", "-", stdin=POD)
    lab.settle()
    return found


def _sh(kubectl: Kubectl, script: str) -> subprocess.CompletedProcess[str]:
    return kubectl.run("exec", "store", "--", "sh", "-c", script, check=False)


def test_a_file_restored_with_cp_checks_out_with_the_hosts_tools(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    seed = tmp_path / "seed.csv"
    seed.write_bytes(SEED)
    kubectl.run("exec", "store", "--", "mkdir", "-p", "/data/seed")
    kubectl.run("cp", str(seed), "store:/data/seed/seed.csv")
    assert kubectl.out("exec", "store", "--", "wc", "-l", "/data/seed/seed.csv") == (
        "4 /data/seed/seed.csv\n"
    )
    checksum = _sh(kubectl, "test -s /data/seed/seed.csv && md5sum /data/seed/seed.csv")
    assert checksum.stdout == f"{hashlib.md5(SEED).hexdigest()}  /data/seed/seed.csv\n"
    sha = kubectl.out("exec", "store", "--", "sha256sum", "/data/seed/seed.csv")
    assert sha.split()[0] == hashlib.sha256(SEED).hexdigest()
    names = _sh(kubectl, "awk -F, 'NR > 1 {print $2}' /data/seed/seed.csv | sort | uniq -c")
    assert names.stdout == "      1 alpha\n      2 beta\n"
    ids = _sh(kubectl, "cut -d, -f1 /data/seed/seed.csv | tail -n +2 | sort -rn | tr '\\n' ' '")
    assert ids.stdout == "3 2 1 "
    assert kubectl.run("exec", "store", "--", "grep", "-qx", "2,beta", "/data/seed/seed.csv")


def test_ls_la_shows_modes_sizes_and_dates_and_the_file_applets_work(kubectl: Kubectl) -> None:
    made = _sh(
        kubectl,
        "printf 'hello\\n' > /data/a.txt && cp /data/a.txt /data/b.txt && mkdir -p /data/d/e "
        "&& mv /data/b.txt /data/d/ && touch /data/empty && rm /data/a.txt && ls -la /data",
    )
    assert made.returncode == 0, made.stderr
    lines = made.stdout.splitlines()
    assert lines[0].startswith("total ")
    rows = {line.split()[-1]: line.split() for line in lines[1:]}
    assert set(rows) == {".", "..", "d", "empty"}
    assert rows["d"][:5] == ["drwxr-xr-x", "3", "root", "root", "4096"]
    assert rows["empty"][:5] == ["-rw-r--r--", "1", "root", "root", "0"]
    month, day, clock = rows["empty"][5:8]
    assert len(month) == 3 and day.isdigit() and ":" in clock  # written now: a time, no year
    assert kubectl.out("exec", "store", "--", "cat", "/data/d/b.txt") == "hello\n"
    gone = kubectl.run("exec", "store", "--", "cat", "/data/a.txt", check=False)
    assert gone.returncode == 1
    assert "can't open '/data/a.txt': No such file or directory" in gone.stderr
    missing = _sh(kubectl, "md5sum /data/nope; rsync -a /data /tmp")
    assert missing.stderr.splitlines() == [
        "md5sum: can't open '/data/nope': No such file or directory",
        "sh: rsync: not found",
        "command terminated with exit code 127",
    ]
    assert missing.returncode == 127
