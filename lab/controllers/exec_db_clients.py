"""``redis-cli``, ``pg_isready`` and ``psql`` inside ``kubectl exec``: they reach the server
through the cluster network (``exec_network``: the Service's ready endpoints, or the pod's own
server for ``localhost``) and print what the real clients print, connected or not.

What redis holds lives per server pod in ``data`` (``ExecSessions.server_data``, answered by
``redis_model``), so a ``set`` through the Service is there for a ``get`` in the server's own
container, and for a client on the far side of ``port-forward``. Output is
redis-cli's raw form unless the exec has a terminal (``-t``), as redis-cli chooses itself.
"""

from __future__ import annotations

import re
import shlex

from lab.controllers import redis_model
from lab.controllers.exec_network import ClusterNetwork
from lab.controllers.exec_shell import Io, Shell
from lab.controllers.port_answers import PortTarget

SOCKET_DIR = "/var/run/postgresql"


def _options(args: list[str], valued: set[str]) -> tuple[dict[str, str], list[str]]:
    """Split ``-h host -p6379 -tAc 'select 1' --raw rest…`` into options (clustered short
    flags each on their own, ``-x`` → "") and the words after them."""
    options: dict[str, str] = {}
    rest: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if rest or not arg.startswith("-") or arg == "-":
            rest.append(arg)
        elif arg.startswith("--"):
            name, equals, value = arg.partition("=")
            if not equals and name in valued and index < len(args):
                value, index = args[index], index + 1
            options[name] = value
        else:
            for at, letter in enumerate(arg[1:], start=2):
                if f"-{letter}" not in valued:
                    options[f"-{letter}"] = ""
                    continue
                value = arg[at:]
                if not value and index < len(args):
                    value, index = args[index], index + 1
                options[f"-{letter}"] = value
                break
    return options, rest


def _reach(shell: Shell, host: str, port: int, wire: str) -> tuple[PortTarget | None, str, str]:
    network: ClusterNetwork | None = shell.network
    if network is None:
        return None, "resolve", ""
    target, failure, ip = network.connect(host, port)
    if target is not None and target.wire != wire:
        return None, "protocol", ip
    return target, failure, ip


# ---------------------------------------------------------------- redis-cli


def redis_cli(
    shell: Shell, argv: list[str], io_: Io, *, data: dict[str, dict[str, str]], tty: bool
) -> int:
    options, words = _options(argv[1:], {"-h", "-p", "-a", "-n", "-u", "--user", "--pass"})
    if "--version" in options or "-v" in options:
        io_.out(b"redis-cli 7.2.4\n")
        return 0
    host = options.get("-h", "127.0.0.1")
    port = int(options["-p"]) if options.get("-p", "").isdigit() else 6379
    raw = "--raw" in options or not tty
    target, failure, _ = _reach(shell, host, port, "redis")
    if target is None:
        reason = {
            "resolve": "Name or service not known",
            "refused": "Connection refused",
        }.get(failure, "Connection reset by peer")
        io_.err(f"Could not connect to Redis at {host}:{port}: {reason}\n".encode())
        return 1
    keys = target.data if target.data is not None else data.setdefault(target.uid, {})
    commands = [words] if words else []
    if not words:  # no command: read them from stdin, as redis-cli does without a terminal
        while (line := io_.stdin.readline()) is not None:
            if line.strip():
                commands.append(shlex.split(line.decode("utf-8", "replace")))
    for command in commands:
        io_.out((redis_model.shown(redis_model.run(command, keys), raw=raw) + "\n").encode())
    return 0


# ---------------------------------------------------------------- postgres clients

_PG_VALUED = {"-h", "-p", "-U", "-d", "-c", "-f", "-v", "-P", "--host", "--port", "--username"}
_PG_VALUED |= {"--dbname", "--command", "--file"}


def _pg_where(options: dict[str, str]) -> tuple[str, int]:
    host = options.get("-h", options.get("--host", ""))
    port_text = options.get("-p", options.get("--port", "5432"))
    return host, int(port_text) if port_text.isdigit() else 5432


def pg_isready(shell: Shell, argv: list[str], io_: Io) -> int:
    options, _ = _options(argv[1:], {"-h", "-p", "-U", "-d", "-t", "--host", "--port"})
    host, port = _pg_where(options)
    target, _, _ = _reach(shell, host or "127.0.0.1", port, "postgres")
    shown = host or SOCKET_DIR
    quiet = "-q" in options or "--quiet" in options
    if target is None:
        if not quiet:
            io_.out(f"{shown}:{port} - no response\n".encode())
        return 2
    if not quiet:
        io_.out(f"{shown}:{port} - accepting connections\n".encode())
    return 0


def psql(shell: Shell, argv: list[str], io_: Io, *, version: str) -> int:
    options, rest = _options(argv[1:], _PG_VALUED)
    tuples_only = "-t" in options or "--tuples-only" in options
    unaligned = "-A" in options or "--no-align" in options
    host, port = _pg_where(options)
    user = options.get("-U", options.get("--username", shell.env.get("PGUSER", "postgres")))
    target, failure, ip = _reach(shell, host or "127.0.0.1", port, "postgres")
    if host:
        where = f'connection to server at "{host}" ({ip}), port {port} failed'
    else:
        where = f'connection to server on socket "{SOCKET_DIR}/.s.PGSQL.{port}" failed'
    if target is None:
        if failure == "resolve":
            io_.err(
                f'psql: error: could not translate host name "{host}" to address: '
                "Name or service not known\n".encode()
            )
        elif host:
            io_.err(
                f"psql: error: {where}: Connection refused\n\tIs the server running on that "
                "host and accepting TCP/IP connections?\n".encode()
            )
        else:
            io_.err(
                f"psql: error: {where}: No such file or directory\n\tIs the server running "
                "locally and accepting connections on that socket?\n".encode()
            )
        return 2
    server_env = dict(target.env)
    owner = server_env.get("POSTGRES_USER") or "postgres"
    database = options.get("-d", options.get("--dbname", rest[0] if rest else user))
    trusted = not host or host in ("localhost", "127.0.0.1")
    trusted = trusted or server_env.get("POSTGRES_HOST_AUTH_METHOD") == "trust"
    password = server_env.get("POSTGRES_PASSWORD", "")
    refusal = ""
    if user != owner:
        refusal = f'FATAL:  role "{user}" does not exist'
    elif not trusted and not shell.env.get("PGPASSWORD"):
        refusal = "fe_sendauth: no password supplied"
    elif not trusted and shell.env.get("PGPASSWORD") != password:
        refusal = f'FATAL:  password authentication failed for user "{user}"'
    elif database not in (owner, server_env.get("POSTGRES_DB") or owner, "postgres", "template1"):
        refusal = f'FATAL:  database "{database}" does not exist'
    if refusal:
        io_.err(f"psql: error: {where}: {refusal}\n".encode())
        return 2

    def run(statement: str) -> None:
        answer = _statement(statement.strip(), database, user, version, tuples_only, unaligned)
        io_.out(answer.encode())

    query = options.get("-c", options.get("--command"))
    if query is not None:
        for statement in [s for s in query.split(";") if s.strip()]:
            run(statement)
        return 0
    # Statements from stdin as they arrive, each ending at its ";" (a terminal gets the
    # prompt, ``kubectl exec -it db -- psql``); ``\q`` ends the session.
    tty = shell.env.get("TERM") is not None
    if tty:
        io_.out(f'psql ({version})\nType "help" for help.\n\n{database}=# '.encode())
    pending = ""
    while (line := io_.stdin.readline()) is not None:
        text = line.decode("utf-8", "replace").strip()
        if text in ("\\q", "quit", "exit"):
            break
        if text.startswith("\\"):
            run(text)
        else:
            pending += " " + text
            *done, pending = pending.split(";")
            for statement in [d for d in done if d.strip()]:
                run(statement)
        if tty:
            io_.out(f"{database}{'-' if pending.strip() else '='}# ".encode())
    return 0


def _statement(
    sql: str, database: str, user: str, version: str, tuples_only: bool, unaligned: bool
) -> str:
    select = re.fullmatch(r"(?is)select\s+(.+)", sql)
    if select is None:
        if sql.startswith("\\"):
            return "Did not find any relations.\n" if sql.startswith("\\d") else ""
        words = sql.split()
        tag = " ".join(w.upper() for w in words[:2])
        if tag.startswith("INSERT"):
            return "INSERT 0 1\n"
        return (tag if tag.split()[0] in ("CREATE", "DROP", "ALTER") else words[0].upper()) + "\n"
    columns: list[tuple[str, str, bool]] = []  # (name, value, numeric)
    for item in [i.strip() for i in select.group(1).split(",")]:
        parts = re.split(r"(?i)\s+as\s+", item, maxsplit=1)
        expression = parts[0].strip()
        alias = parts[1].strip() if len(parts) > 1 else ""
        lowered = expression.lower()
        if re.fullmatch(r"-?\d+(\.\d+)?", expression):
            columns.append((alias or "?column?", expression, True))
        elif re.fullmatch(r"'[^']*'", expression):
            columns.append((alias or "?column?", expression[1:-1], False))
        elif lowered == "version()":
            columns.append((alias or "version", _VERSION.format(version=version), False))
        elif lowered in ("current_database()", "current_user", "user", "current_user()"):
            value = database if "database" in lowered else user
            columns.append((alias or lowered.rstrip("()"), value, False))
        elif lowered == "now()":
            columns.append((alias or "now", "2026-01-01 00:00:00.000000+00", False))
        else:
            name = expression.split("(", 1)[0]
            return f'ERROR:  column "{name}" does not exist\nLINE 1: {sql}\n'
    if unaligned:
        values = "|".join(c[1] for c in columns)
        header = "" if tuples_only else "|".join(c[0] for c in columns) + "\n"
        return header + values + "\n" + ("" if tuples_only else "(1 row)\n")
    widths = [max(len(name), len(value)) for name, value, _ in columns]
    head = "|".join(f" {n.center(w)} " for (n, _, _), w in zip(columns, widths, strict=True))
    rule = "+".join("-" * (w + 2) for w in widths)
    row = "|".join(
        f" {v.rjust(w) if numeric else v.ljust(w)} "
        for (_, v, numeric), w in zip(columns, widths, strict=True)
    ).rstrip()
    if tuples_only:
        return f"{row}\n\n"
    return f"{head}\n{rule}\n{row}\n(1 row)\n\n"


_VERSION = (
    "PostgreSQL {version} (Debian {version}-1.pgdg120+2) on x86_64-pc-linux-gnu, compiled by gcc "
    "(Debian 12.2.0-14) 12.2.0, 64-bit"
)
