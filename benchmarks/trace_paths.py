"""How many product files one use-case enters, and whether control climbs back into a file it
already left: the reading path of issue 17, measured instead of guessed.

Runs ``stratus act scale`` (propose, approve, execute) in this process against an in-process
lab, with a profile hook on the main thread that sees every Python call. It prints the product
files whose functions ran (after the CLI was dispatched: imports and the click group's own
loading are not counted), in the order first entered, and every *re-entry*: a call into a file
that is already on the call stack below the caller's file (A → B → A — a callback climbing
back into a caller). Module-level import code is not counted as entering a file.

Run with ``.venv/bin/python benchmarks/trace_paths.py``; figures go in docs/benchmarks.md.
"""

from __future__ import annotations

import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

from click.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lab.runner import LabServer, write_kubeconfig  # noqa: E402

PRODUCT = frozenset(
    (
        "cli",
        "bot",
        "gateway",
        "incidents",
        "agents",
        "proposals",
        "policies",
        "undo",
        "tools",
        "store",
    )
)
WRITES = {"create", "replace", "delete", "patch"}


def product_file(code: types.CodeType) -> str | None:
    try:
        relative = Path(code.co_filename).resolve().relative_to(REPO)
    except ValueError:
        return None
    if relative.parts[0] not in PRODUCT or code.co_name == "<module>":
        return None
    return str(relative)


class PathTrace:
    """The product files entered, in order, and the re-entries."""

    def __init__(self) -> None:
        self.entered: list[str] = []
        self.reentries: list[str] = []
        self.stack: list[str | None] = []
        # The product files on the call stack whenever the cluster is written to (a
        # non-dry-run create/replace/delete of tools/k8s.py): the spine of the write path.
        self.spines: list[list[str]] = []

    def __call__(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "call":
            name = product_file(frame.f_code)
            files = [f for f in self.stack if f is not None]
            if name is not None:
                if name not in self.entered:
                    self.entered.append(name)
                if files and files[-1] != name and name in files:
                    self.reentries.append(f"{files[-1]} → {name} ({frame.f_code.co_name})")
            self.stack.append(name)
            writes = name == "tools/k8s.py" and frame.f_code.co_name in WRITES
            if writes and not frame.f_locals.get("dry_run", False):
                self.spines.append(list(dict.fromkeys(f for f in self.stack if f)))
        elif event == "return" and self.stack:
            self.stack.pop()


def trace_act_scale() -> PathTrace:
    server = LabServer(apps=["hotel"]).start()
    try:
        folder = Path(tempfile.mkdtemp())
        kubeconfig = write_kubeconfig(folder / "kubeconfig", server.url, "hotel")
        os.environ.update(
            KUBECONFIG=str(kubeconfig),
            STRATUS_HOME=str(folder / "home"),
            STRATUS_ACTOR="bench",
        )
        from cli.main import stratus

        runner = CliRunner()
        # Warm up (imports, lazy command loading, schema) so only the use-case is traced.
        runner.invoke(
            stratus,
            ["act", "scale", "deployment/frontend", "replicas=1", "-n", "hotel", "--dry-run"],
        )
        trace = PathTrace()
        sys.setprofile(trace)
        try:
            result = runner.invoke(
                stratus,
                ["act", "scale", "deployment/frontend", "replicas=3", "-n", "hotel", "--yes"],
            )
        finally:
            sys.setprofile(None)
        if result.exit_code != 0:
            raise SystemExit(f"stratus act scale failed:\n{result.output}")
        return trace
    finally:
        server.stop()


def main() -> None:
    trace = trace_act_scale()
    print(f"stratus act scale: {len(trace.entered)} product files entered")
    for name in trace.entered:
        print(f"  {name}")
    for spine in trace.spines:
        print(f"on the stack at the write: {len(spine)} files: {' → '.join(spine)}")
    print(f"re-entries (a call back into a file already on the stack): {len(trace.reentries)}")
    for line in dict.fromkeys(trace.reentries):
        print(f"  {line}")


if __name__ == "__main__":
    main()
