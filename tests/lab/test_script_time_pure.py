"""A container's shell script over time, without a cluster: lines carry the second they are
printed, a while loop stops between passes at the horizon and goes on from the next pass
against the files as they are then, and `test`/`[` evaluates as busybox's does."""

from __future__ import annotations

import pytest

from lab.controllers import container_scripts, exec_files, exec_tools
from lab.controllers.container_scripts import ScriptOutcome
from lab.controllers.exec_files import ContainerFiles, Layer
from lab.controllers.exec_shell import Io, Shell, Stdin


def _files() -> tuple[ContainerFiles, Layer]:
    files = ContainerFiles(exec_files.bare_layer("web-1"))
    work = Layer()
    files.mounts.append(("/work", work, True))
    return files, work


def _script(command: str, files: ContainerFiles, *, horizon: float = 0.0) -> ScriptOutcome:
    return container_scripts.run(
        ["sh", "-c", command],
        files=files,
        env={},
        pod="web-1",
        binaries=set(),
        stdin=False,
        horizon=horizon,
    )


def _to_the_end(outcome: ScriptOutcome, passes: int = 100) -> list[ScriptOutcome]:
    steps = [outcome]
    while steps[-1].resume is not None and len(steps) < passes:
        steps.append(steps[-1].resume.step())  # type: ignore[union-attr]
    return steps


def test_lines_carry_the_second_they_are_printed_at() -> None:
    files, _ = _files()
    outcome = _script("echo early; sleep 5; echo late; sleep 2; printf tail", files)
    assert outcome.output == ["early", "late", "tail"]
    assert outcome.output_at == [0.0, 5.0, 7.0]
    assert (outcome.exit_code, outcome.after, outcome.resume) == (0, 7.0, None)


def test_a_loop_stops_at_the_horizon_and_each_step_runs_one_pass() -> None:
    files, _ = _files()
    first = _script("while true; do echo tick; sleep 1; done", files)
    assert first.output == ["tick"] and first.exit_code is None
    assert first.resume is not None and first.resume.at == 1.0
    steps = _to_the_end(first, passes=4)
    assert [s.output for s in steps] == [["tick"]] * 4
    assert [s.output_at for s in steps] == [[0.0], [1.0], [2.0], [3.0]]
    assert all(s.resume is not None for s in steps)


def test_a_loop_waiting_for_a_file_sees_it_when_it_is_written_later() -> None:
    files, work = _files()
    script = (
        "while [ ! -f /work/license.key ]; do echo waiting; sleep 1; done; "
        'echo "licensed to $(cat /work/license.key)"; exit 3'
    )
    outcome = _script(script, files)
    for _ in range(3):
        assert outcome.resume is not None
        outcome = outcome.resume.step()
        assert outcome.output == ["waiting"]
    # What `kubectl cp` writes lands in the emptyDir both views share.
    other = ContainerFiles(exec_files.bare_layer("web-1"))
    other.mounts.append(("/work", work, True))
    other.write("/work/license.key", b"acme-corp\n")
    assert outcome.resume is not None
    done = outcome.resume.step()
    assert done.output == ["licensed to acme-corp"]
    assert done.output_at == [4.0]
    assert (done.exit_code, done.after, done.resume) == (3, 4.0, None)


def test_what_follows_a_loop_and_an_enclosing_loop_goes_on_in_order() -> None:
    files, _ = _files()
    script = (
        "set -e; n=0; while [ $n -lt 2 ]; do n=$((n+1)); i=0; "
        "while [ $i -lt 2 ]; do i=$((i+1)); echo $n.$i; sleep 1; done; done; "
        "echo end; false; echo never"
    )
    steps = _to_the_end(_script(script, files))
    printed = [line for s in steps for line in s.output]
    assert printed == ["1.1", "1.2", "2.1", "2.2", "end"]
    assert [at for s in steps for at in s.output_at] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert steps[-1].exit_code == 1  # set -e survived the stops


def test_the_instant_horizon_runs_the_first_ten_seconds_at_once() -> None:
    files, _ = _files()
    outcome = _script(
        "while true; do echo tick; sleep 1; done", files, horizon=container_scripts.LOOP_SECONDS
    )
    assert len(outcome.output) == 11
    assert outcome.resume is not None and outcome.resume.at == 11.0


@pytest.mark.parametrize(
    "script",
    [
        "while true; do echo x; sleep 1; done | cat",  # a pipeline
        "(while true; do sleep 1; done)",  # a subshell
        "echo $(while true; do sleep 1; done)",  # a command substitution
        "while true; do sleep 1; done & echo started",  # a background job
        "for i in 1 2; do while true; do sleep 1; done; done",  # inside a for
        "while true; do :; done",  # no sleep: the pass limit
    ],
)
def test_a_loop_that_cannot_be_taken_up_again_runs_on_as_endless(script: str) -> None:
    files, _ = _files()
    outcome = _script(script, files)
    assert (outcome.exit_code, outcome.resume) == (None, None)


def _test(args: str, files: ContainerFiles | None = None) -> tuple[int, bytes]:
    shell = Shell(files or _files()[0], {}, tools=dict(exec_tools.TOOLS))
    err = bytearray()
    code = exec_tools.TOOLS["["](
        shell, ["[", *args.split(), "]"], Io(Stdin(b""), print, err.extend)
    )
    return code, bytes(err)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ("", 1),
        ("-f", 0),  # one argument: a non-empty string
        ("! -f /work/key", 0),
        ("-f /work/key", 1),
        ("-f /work/there", 0),
        ("! -f /work/there", 1),
        ("-d /work", 0),
        ("-f /work", 1),
        ("-s /work/empty", 1),
        ("-e /work/empty", 0),
        ("-z x", 1),
        ("! -z x", 0),
        ("a = a", 0),
        ("a != a", 1),
        ("! = x", 1),  # three arguments: a comparison, not a negation
        ("3 -gt 2 -a 1 -eq 1", 0),
        ("3 -gt 2 -a 1 -eq 2", 1),
        ("1 -eq 2 -o -d /work", 0),
        ("! 1 -eq 2", 0),
        ("( a = b ) -o ( b = b )", 0),
        ("! ( -f /work/there -a -f /work/key )", 0),
    ],
)
def test_test_decides_as_busybox(args: str, code: int) -> None:
    files, work = _files()
    work.files["/there"] = b"x"
    work.files["/empty"] = b""
    assert _test(args, files)[0] == code


def test_test_errors_exit_2_with_a_message() -> None:
    assert _test("abc -eq 1") == (2, b"sh: [: abc: bad number\n")
    assert _test("-q x") == (2, b"sh: [: -q: unknown operand\n")
    shell = Shell(_files()[0], {}, tools=dict(exec_tools.TOOLS))
    err = bytearray()
    missing = exec_tools.TOOLS["["](shell, ["[", "a"], Io(Stdin(b""), print, err.extend))
    assert (missing, bytes(err)) == (2, b"sh: [: missing ]\n")
