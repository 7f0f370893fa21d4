"""What a started container does, from its image and its command line (no clock).

The kubelet asks :func:`plan` once per start. Docker's rules give the command line: the
pod's ``command`` replaces the image's entrypoint (and drops its default arguments), ``args``
replace the default arguments. Then:

- the image's server binary (``nginx``, ``redis-server``, an entrypoint script that ends up
  running it …) runs the server the catalog describes;
- a shell (``sh -c '…'``, ``bash -c``) or a shell utility in an image that has one runs on
  the shell ``kubectl exec`` uses, in virtual time (:mod:`container_scripts`): ``sleep N``
  takes N seconds, ``sleep infinity``, ``tail -f``, endless loops, ``nc -l`` and ``httpd -f``
  never end, what it prints is the log, what it writes lands in the container's files,
  ``exit N`` and ``false`` fail, and an unknown program is ``sh: X: not found`` (127);
- a bare shell with no script exits at once (no terminal), unless the pod keeps stdin open;
- anything else is a binary the image does not have: it exits 127.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from lab.controllers import container_scripts, exec_files
from lab.controllers.exec_files import ContainerFiles
from lab.images import ImageSpec

_PORT_FLAGS = re.compile(
    r"^(?:--?(?:port|http-port|listen|listen-port|bind|addr|address|web\.listen-address))"
    r"[= ]?(?:[\w.\-\[\]]*:)?(\d{2,5})$"
)


@dataclass
class Plan:
    """What one run of a container does."""

    serve: bool = False  # runs the image's server as the catalog describes it
    exit_code: int | None = None  # None: runs until it is stopped
    after: float = 0.0  # seconds until it exits
    output: list[str] = field(default_factory=list)  # what it prints, line by line
    output_at: list[float] = field(default_factory=list)  # each line's second of the run
    listens: list[int] = field(default_factory=list)  # ports it opens
    # The ports among them that answer HTTP, with the paths served (globs; None: any path).
    http: dict[int, list[str] | None] = field(default_factory=dict)
    missing: str = ""  # the program the image does not have (exit 127)
    # A script's while loop stopped between passes: it goes on at ``resume.at``.
    resume: container_scripts.Continuation | None = None


def command_line(spec: ImageSpec, container: dict[str, Any]) -> list[str]:
    """The argv a container runs, by Docker's entrypoint/cmd rules."""
    command = [str(c) for c in container.get("command") or []]
    args = [str(a) for a in container.get("args") or []]
    if command:
        return [*command, *args]
    if spec.entrypoint or spec.cmd:
        return [*spec.entrypoint, *(args or spec.cmd)]
    return [*([spec.command] if spec.command else []), *args]


def plan(
    spec: ImageSpec,
    container: dict[str, Any],
    env: dict[str, str],
    pod: str,
    files: ContainerFiles | None = None,
    *,
    horizon: float = container_scripts.LOOP_SECONDS,
) -> Plan:
    """What the container does this run; a script writes into ``files`` (the container's
    view of its layer and volumes; a layer of its own when not given)."""
    argv = command_line(spec, container)
    servers = spec.server_binaries()
    entry = spec.entrypoint
    execs_args = bool(entry) and (entry[-1].endswith(".sh") or entry[0].endswith("tini"))
    if execs_args and argv[: len(entry)] == entry and entry[-1].rsplit("/", 1)[-1] not in servers:
        argv = argv[len(entry) :]  # an entrypoint script that execs its arguments
    while argv:
        program = argv[0].rsplit("/", 1)[-1]
        if program not in servers:
            break
        rest = argv[1:]
        # An entrypoint script runs the server with options or a config file, or execs
        # another command; a server's own script takes a subcommand (catalina.sh run).
        entrypoint = program in {e.rsplit("/", 1)[-1] for e in entry}
        if (
            program.endswith(".sh")
            and entrypoint
            and rest
            and not rest[0].startswith("-")
            and not rest[0].endswith((".yml", ".yaml", ".conf", ".json", ".cfg"))
        ):
            if rest[0].rsplit("/", 1)[-1] in servers:
                argv = rest
                continue
            argv = rest
            break
        ports = (_ports(rest) if spec.port_args else []) or list(spec.listens)
        http: dict[int, list[str] | None] = (
            dict.fromkeys(ports, spec.http_paths) if spec.http else {}
        )
        return Plan(serve=True, listens=ports, http=http)
    if not argv:
        return Plan(exit_code=0, after=0.2)
    program = argv[0].rsplit("/", 1)[-1]
    if not spec.shell or program not in container_scripts.PROGRAMS | set(spec.binaries):
        return Plan(exit_code=127, after=0.2, missing=argv[0])
    outcome = container_scripts.run(
        argv,
        files=files if files is not None else ContainerFiles(exec_files.bare_layer(pod)),
        env=env,
        pod=pod,
        binaries=set(spec.binaries),
        stdin=bool(container.get("stdin")),
        horizon=horizon,
    )
    return Plan(
        exit_code=outcome.exit_code,
        after=outcome.after,
        output=outcome.output,
        output_at=outcome.output_at,
        resume=outcome.resume,
        listens=outcome.listens,
        http=outcome.http,
    )


def _ports(args: list[str]) -> list[int]:
    ports: list[int] = []
    joined = [
        f"{a}={b}" if a.startswith("-") and "=" not in a and b.isdigit() else a
        for a, b in zip(args, [*args[1:], ""], strict=True)
    ]
    for arg in joined:
        match = _PORT_FLAGS.match(arg)
        if match:
            ports.append(int(match.group(1)))
    return ports
