"""``wget``, ``curl`` and ``nslookup`` inside a container, over :mod:`exec_network`, printing
what busybox wget, curl and busybox nslookup print (their messages and exit codes)."""

from __future__ import annotations

from urllib.parse import urlsplit

from lab.controllers.exec_network import DNS_SERVER, ClusterNetwork, Reply
from lab.controllers.exec_shell import Io, Shell


def _request(host: str, path: str, method: str = "GET") -> bytes:
    return (
        f"{method} {path or '/'} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: Wget\r\n"
        "Connection: close\r\n\r\n"
    ).encode()


def _fetch(shell: Shell, url: str, method: str = "GET") -> tuple[str, int, Reply]:
    parts = urlsplit(url if "://" in url else f"http://{url}")
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    network: ClusterNetwork | None = shell.network
    if network is None:
        return host, port, Reply(failure="resolve")
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    return host, port, network.get(host, port, _request(host, path, method))


def wget(shell: Shell, argv: list[str], io_: Io) -> int:
    args = argv[1:]
    quiet = False
    spider = "--spider" in args
    output = None
    urls: list[str] = []
    skip = False
    for index, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg.startswith("--"):
            quiet = quiet or arg == "--quiet"
            skip = arg in ("--header", "--user-agent", "--timeout", "--output-document")
            if arg == "--output-document" and index + 1 < len(args):
                output = args[index + 1]
        elif arg.startswith("-") and len(arg) > 1:
            letters = arg[1:]
            quiet = quiet or "q" in letters.split("O", 1)[0]
            if "O" in letters:  # -O FILE, -OFILE, -qO-, -qO FILE
                rest = letters.split("O", 1)[1]
                if rest:
                    output = rest
                elif index + 1 < len(args):
                    output, skip = args[index + 1], True
            elif letters[-1] in "TtUY":
                skip = True
        else:
            urls.append(arg)
    if not urls:
        io_.err(b"BusyBox v1.36.1 multi-call binary.\n\nUsage: wget [-cqS] [-O FILE] URL...\n")
        return 1
    host, port, reply = _fetch(shell, urls[0], "HEAD" if spider else "GET")
    if reply.failure == "resolve":
        io_.err(f"wget: bad address '{host}'\n".encode())
        return 1
    if not quiet:
        io_.err(f"Connecting to {host} ({reply.address or host}:{port})\n".encode())
    if reply.failure:
        reason = "Connection refused" if reply.failure == "refused" else "Connection reset by peer"
        io_.err(f"wget: can't connect to remote host ({reply.address}): {reason}\n".encode())
        return 1
    if reply.status >= 400:
        io_.err(f"wget: server returned error: HTTP/1.1 {reply.status} {reply.reason}\n".encode())
        return 1
    if spider:
        if not quiet:
            io_.err(b"remote file exists\n")
        return 0
    target = output or urls[0].rstrip("/").rsplit("/", 1)[-1] or "index.html"
    if "/" not in urls[0].split("://", 1)[-1]:
        target = output or "index.html"
    if target == "-":
        io_.out(reply.body)
        if not quiet:
            io_.err(b"writing to stdout\nwritten to stdout\n")
        return 0
    problem = shell.files.write(shell._path(target), reply.body)
    if problem:
        io_.err(f"wget: can't open '{target}': {problem}\n".encode())
        return 1
    if not quiet:
        io_.err(f"saving to '{target}'\n'{target}' saved\n".encode())
    return 0


def curl(shell: Shell, argv: list[str], io_: Io) -> int:
    args = argv[1:]
    flags = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
    silent = "s" in flags or "--silent" in args
    show_error = "S" in flags or "--show-error" in args
    fail = "f" in flags or "--fail" in args
    head = "I" in flags or "--head" in args
    include = "i" in flags or "--include" in args
    output, write_out = None, ""
    urls: list[str] = []
    skip = False
    for index, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in (
            "-o",
            "--output",
            "-w",
            "--write-out",
            "-m",
            "--max-time",
            "-H",
            "--header",
            "-X",
            "--request",
            "--connect-timeout",
            "-d",
            "--data",
            "-A",
            "--user-agent",
        ):
            value = args[index + 1] if index + 1 < len(args) else ""
            if arg in ("-o", "--output"):
                output = value
            elif arg in ("-w", "--write-out"):
                write_out = value
            skip = True
        elif not arg.startswith("-"):
            urls.append(arg)
    if not urls:
        io_.err(b"curl: try 'curl --help' or 'curl --manual' for more information\n")
        return 2
    host, port, reply = _fetch(shell, urls[0], "HEAD" if head else "GET")

    def error(code: int, text: str) -> int:
        if not silent or show_error:
            io_.err(f"curl: ({code}) {text}\n".encode())
        if write_out:
            io_.out(write_out.replace("%{http_code}", "000").replace("\\n", "\n").encode())
        return code

    if reply.failure == "resolve":
        return error(6, f"Could not resolve host: {host}")
    if reply.failure == "refused":
        return error(
            7, f"Failed to connect to {host} port {port} after 0 ms: Couldn't connect to server"
        )
    if reply.failure:
        return error(52, "Empty reply from server")
    if fail and reply.status >= 400:
        return error(22, f"The requested URL returned error: {reply.status}")
    data = b""
    if head or include:
        data += reply.headers.replace("\n", "\r\n").encode() + b"\r\n\r\n"
    if not head:
        data += reply.body
    if output and output != "-":
        problem = shell.files.write(shell._path(output), data)
        if problem:
            return error(23, "Failure writing output to destination")
    else:
        io_.out(data)
    if write_out:
        io_.out(write_out.replace("%{http_code}", str(reply.status)).replace("\\n", "\n").encode())
    return 0


def nslookup(shell: Shell, argv: list[str], io_: Io) -> int:
    names = [a for a in argv[1:] if not a.startswith("-")]
    if not names:
        io_.err(b"Usage: nslookup [-type=QUERY_TYPE] [-debug] HOST [DNS_SERVER]\n")
        return 1
    network: ClusterNetwork | None = shell.network
    found = network.lookup(names[0]) if network is not None else None
    io_.out(f"Server:\t\t{DNS_SERVER}\nAddress:\t{DNS_SERVER}:53\n\n".encode())
    if found is None or found[1] in ("", "None"):
        namespace = network.namespace if network is not None else "default"
        qualified = names[0] if "." in names[0] else f"{names[0]}.{namespace}.svc.cluster.local"
        io_.out(f"** server can't find {qualified}: NXDOMAIN\n\n".encode())
        return 1
    io_.out(f"Name:\t{found[0]}\nAddress: {found[1]}\n\n".encode())
    return 0


TOOLS = {"wget": wget, "curl": curl, "nslookup": nslookup}
