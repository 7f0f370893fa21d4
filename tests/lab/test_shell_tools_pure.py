"""The lab's container shell as a pure function: a script in, what it prints and its exit
status out, over a container's files held in memory (no lab, no sockets). The same shell runs
``kubectl exec`` and a container's own command (``container_scripts``), so what holds here
holds for both; ``test_shell_tools.py`` checks the same applets through a real kubectl."""

from __future__ import annotations

import hashlib

import pytest

from lab.controllers import container_scripts, exec_tools, shell_arith
from lab.controllers.exec_files import ContainerFiles, Layer, bare_layer
from lab.controllers.exec_shell import Io, Shell, Stdin


def _files() -> ContainerFiles:
    files = ContainerFiles(base=bare_layer("toolbox"))
    files.mounts.append(("/data", Layer(), True))
    return files


def _sh(script: str, files: ContainerFiles | None = None, stdin: bytes = b"") -> tuple[str, int]:
    shell = Shell(files or _files(), {"HOME": "/root"}, tools=dict(exec_tools.TOOLS))
    printed = bytearray()
    code = shell.run_argv(["sh", "-c", script], Io(Stdin(stdin), printed.extend, printed.extend))
    return printed.decode(), code


SEED = "printf 'id,name\\n1,alpha\\n2,beta\\n' > /data/seed.csv; "


@pytest.mark.parametrize(
    ("script", "printed", "code"),
    [
        ("i=0; while [ $i -lt 3 ]; do echo $((i * 2)); i=$((i + 1)); done", "0\n2\n4\n", 0),
        ("echo $((7 / 2)) $((-7 / 2)) $((7 % 3)) $((2 > 1 && 0))", "3 -3 1 0\n", 0),
        ("echo $((1 / 0)); echo after", "sh: divide by zero\n", 2),
        ("echo ${UNSET:-fallback} ${HOME:+set} ${#HOME}", "fallback set 5\n", 0),
        (
            "for i in 1 2 3 4; do [ $i = 2 ] && continue; [ $i = 4 ] && break; echo $i; done",
            "1\n3\n",
            0,
        ),
        ("set -e; echo start; false; echo never", "start\n", 1),
        ("set -e; false || true; false && true; echo survives", "survives\n", 0),
        ("sh -ec 'false; echo never'; echo $?", "1\n", 0),
        ("printf 'a b\\nc d\\n' | while read x y; do echo \"$y$x\"; done", "ba\ndc\n", 0),
        ("ech 'welcome' > /data/motd", "sh: ech: not found\n", 127),
        ("sh -c 'echo $0 $1 $# \"$@\"' job a b", "job a 2 a b\n", 0),
        (
            "echo one > /data/f; echo two >> /data/f; ls /nope 2>> /data/f; cat /data/f",
            "one\ntwo\nls: /nope: No such file or directory\n",
            0,
        ),
    ],
)
def test_the_shell_expands_loops_and_fails_as_busybox_sh(
    script: str, printed: str, code: int
) -> None:
    assert _sh(script) == (printed, code)


@pytest.mark.parametrize(
    ("script", "printed"),
    [
        ("wc -l /data/seed.csv", "3 /data/seed.csv\n"),
        ("wc -l < /data/seed.csv", "3\n"),
        ("awk -F, '{print $2}' /data/seed.csv", "name\nalpha\nbeta\n"),
        ("awk -F, 'NR > 1 {print NR, $1 \"-\" $2}' /data/seed.csv", "2 1-alpha\n3 2-beta\n"),
        ("awk '/beta/' /data/seed.csv", "2,beta\n"),
        ("awk -F, 'NR>1 {s += $1} END {print \"sum\", s}' /data/seed.csv", "sum 3\n"),
        ("echo 'a b c' | awk '{print $NF, NF}'", "c 3\n"),
        ('awk \'BEGIN {printf "%s=%d\\n", "x", 3}\'', "x=3\n"),
        (
            "echo Hello | tr a-z A-Z; echo 'a  b' | tr -s ' '; echo abc | tr -d b",
            "HELLO\na b\nac\n",
        ),
        ("echo hello | tr '[:lower:]' '[:upper:]'", "HELLO\n"),
        ("printf 'b\\na\\nb\\n' | sort | uniq -c", "      1 a\n      2 b\n"),
        (
            "printf '10\\n9\\n100\\n' | sort -n; printf '10\\n9\\n' | sort -rn",
            "9\n10\n100\n10\n9\n",
        ),
        ("printf 'b 2\\na 1\\n' | sort -k2 -n | head -n 1", "a 1\n"),
        (
            "echo a:b:c | cut -d: -f2; echo a:b:c | cut -d: -f1,3; echo abcdef | cut -c2-4",
            "b\na:c\nbcd\n",
        ),
        (
            "grep -x '2,beta' /data/seed.csv; grep -c a /data/seed.csv; "
            "grep -n alpha /data/seed.csv",
            "2,beta\n3\n2:1,alpha\n",
        ),
        ("grep -q nothing /data/seed.csv; echo $?", "1\n"),
        ("grep -E 'alpha|beta' /data/seed.csv | wc -l", "2\n"),
        ("tail -n +2 /data/seed.csv | head -n 1", "1,alpha\n"),
        ("test -s /data/seed.csv && [ -f /data/seed.csv ] && echo yes", "yes\n"),
    ],
)
def test_text_applets_print_what_busybox_prints(script: str, printed: str) -> None:
    assert _sh(SEED + script) == (printed, 0)


def test_checksums_match_the_real_digests() -> None:
    data = b"id,name\n1,alpha\n2,beta\n"
    printed, code = _sh(SEED + "md5sum /data/seed.csv; sha256sum < /data/seed.csv")
    assert code == 0
    assert printed == (
        f"{hashlib.md5(data).hexdigest()}  /data/seed.csv\n{hashlib.sha256(data).hexdigest()}  -\n"
    )
    assert _sh("md5sum /nope") == ("md5sum: can't open '/nope': No such file or directory\n", 1)


def test_file_applets_copy_move_and_list_with_modes_sizes_and_dates() -> None:
    files = _files()
    printed, code = _sh(
        SEED + "mkdir -p /data/a/b && cp /data/seed.csv /data/a/ && mv /data/a/seed.csv "
        "/data/a/s.csv && cp -r /data/a /data/c && rm -r /data/a && ls /data /data/c",
        files,
    )
    assert (printed, code) == ("/data:\nc\nseed.csv\n\n/data/c:\nb\ns.csv\n", 0)
    listing, _ = _sh("ls -la /data/c", files)
    lines = listing.splitlines()
    assert lines[0] == "total 16"
    assert [line.split()[-1] for line in lines[1:]] == [".", "..", "b", "s.csv"]
    mode, links, user, group, size, *_ = lines[-1].split()
    assert (mode, links, user, group, size) == ("-rw-r--r--", "1", "root", "root", "23")
    assert lines[3].startswith("drwxr-xr-x ")
    assert _sh("ls -l /etc/hostname", files)[0].split()[5:] == [
        "Nov",
        "12",
        "2024",
        "/etc/hostname",
    ]
    assert _sh("rm /data/c", files) == ("rm: can't remove '/data/c': Is a directory\n", 1)
    assert _sh("mkdir /data/c", files) == (
        "mkdir: can't create directory '/data/c': File exists\n",
        1,
    )
    assert _sh("cp /nope /data/", files) == (
        "cp: can't stat '/nope': No such file or directory\n",
        1,
    )


def test_arithmetic_reads_names_and_refuses_what_is_not_arithmetic() -> None:
    assert shell_arith.evaluate("i + 1", {"i": "41"}) == 42
    assert shell_arith.evaluate("unset * 3", {}) == 0
    with pytest.raises(shell_arith.ShellArithmeticError):
        shell_arith.evaluate("1 +", {})
    with pytest.raises(shell_arith.ShellArithmeticError):
        shell_arith.evaluate("__import__('os')", {})


def _script(command: str, files: ContainerFiles | None = None) -> container_scripts.ScriptOutcome:
    return container_scripts.run(
        ["sh", "-c", command],
        files=files or _files(),
        env={},
        pod="web-1",
        binaries=set(),
        stdin=False,
    )


def test_a_container_script_writes_its_files_and_logs_what_it_prints() -> None:
    files = _files()
    run = _script("echo 'hello from sidecar' > /data/index.html; echo started; exit 3", files)
    assert (run.exit_code, run.output) == (3, ["started"])
    assert files.read("/data/index.html") == b"hello from sidecar\n"
    assert _script("ech hi > /data/motd").output == ["sh: ech: not found"]
    assert _script("ech hi > /data/motd").exit_code == 127


def test_a_loop_with_sleep_runs_its_first_passes_and_then_runs_on() -> None:
    files = _files()
    run = _script(
        "n=0; while true; do n=$((n+1)); echo $n > /data/count; echo tick; sleep 5; done", files
    )
    assert run.exit_code is None  # the container stays Running
    assert run.output == ["tick"] * 3  # passes at 0, 5 and 10 s: the first within the budget
    assert files.read("/data/count") == b"3\n"
    busy = _script("while :; do echo spin; done")
    assert busy.exit_code is None and len(busy.output) == container_scripts.LOOP_PASSES


def test_sleep_is_virtual_time_and_finite_scripts_end_after_it() -> None:
    run = _script("for i in 1 2 3; do echo $i; sleep 2; done; echo done")
    assert (run.exit_code, run.after, run.output) == (0, 6.0, ["1", "2", "3", "done"])
    assert _script("sleep 3600").after == 3600.0
    assert _script("sleep infinity").exit_code is None
    waits = _script("sleep 1000 & echo started; wait")
    assert (waits.exit_code, waits.after, waits.output) == (0, 1000.0, ["started"])
    assert _script("sleep infinity & echo started; wait").exit_code is None
    assert _script("tail -f /dev/null").exit_code is None
    assert _script("yes | head -n 2").output == ["y", "y"]
    assert _script("yes | head -n 2").exit_code == 0
    assert _script("tail -f /var/log/app | grep error").exit_code is None
    listener = _script("nc -lk -p 9000 -e echo hi")
    assert (listener.exit_code, listener.listens) == (None, [9000])
