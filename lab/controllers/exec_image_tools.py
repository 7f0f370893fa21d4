"""The programs a public image ships beside its shell's applets, for ``kubectl exec``: the
server's own ``-v``/``-t`` (``nginx -v`` prints ``nginx version: nginx/1.27.3`` to stderr, for
the version the image's tag runs) and the database clients of ``exec_db_clients``.

Only the images that ship a program get it (``redis-cli`` in redis, ``psql`` in postgres); in
any other image the shell says ``sh: redis-cli: not found`` (127), as there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from lab.controllers import exec_db_clients
from lab.controllers.exec_shell import Io, Shell
from lab.images import ImageSpec

Tool = Callable[[Shell, list[str], Io], int]

NGINX_CONFIGURE = (
    "--prefix=/etc/nginx --sbin-path=/usr/sbin/nginx --modules-path=/usr/lib/nginx/modules "
    "--conf-path=/etc/nginx/nginx.conf --error-log-path=/var/log/nginx/error.log "
    "--http-log-path=/var/log/nginx/access.log --pid-path=/var/run/nginx.pid "
    "--lock-path=/var/run/nginx.lock --user=nginx --group=nginx --with-compat "
    "--with-file-aio --with-threads --with-http_ssl_module --with-http_v2_module "
    "--with-http_stub_status_module --with-stream --with-stream_ssl_module"
)


def nginx(shell: Shell, argv: list[str], io_: Io, *, version: str) -> int:
    args = argv[1:]
    if "-v" in args or "-V" in args:
        io_.err(f"nginx version: nginx/{version}\n".encode())
        if "-V" in args:
            io_.err(
                b"built by gcc 12.2.0 (Debian 12.2.0-14) \n"
                b"built with OpenSSL 3.0.15 3 Sep 2024\nTLS SNI support enabled\n"
                + f"configure arguments: {NGINX_CONFIGURE}\n".encode()
            )
        return 0
    if "-t" in args or "-T" in args:
        conf = "/etc/nginx/nginx.conf"
        io_.err(
            f"nginx: the configuration file {conf} syntax is ok\n"
            f"nginx: configuration file {conf} test is successful\n".encode()
        )
        if "-T" in args:
            io_.out(f"# configuration file {conf}:\n".encode() + (shell.files.read(conf) or b""))
        return 0
    if "-s" in args:  # reload, reopen, quit, stop: the master takes the signal
        return 0
    if "-h" in args or "-?" in args:
        io_.err(f"nginx version: nginx/{version}\nUsage: nginx [-?hvVtTq] [-s signal]\n".encode())
        return 0
    # A second nginx in a running container: the first has the port.
    io_.err(
        b"nginx: [emerg] bind() to 0.0.0.0:80 failed (98: Address in use)\n"
        b"nginx: [emerg] still could not bind()\n"
    )
    return 1


def httpd(shell: Shell, argv: list[str], io_: Io, *, version: str) -> int:
    args = argv[1:]
    if "-v" in args or "-V" in args:
        io_.out(
            f"Server version: Apache/{version} (Unix)\n".encode()
            + b"Server built:   Jul 23 2024 00:00:00\n"
        )
        if "-V" in args:
            io_.out(b'Server MPM:     event\n -D HTTPD_ROOT="/usr/local/apache2"\n')
        return 0
    if "-t" in args or "configtest" in args:
        io_.err(b"Syntax OK\n")
        return 0
    if any(a in ("-k", "graceful", "restart", "stop") for a in args):
        return 0
    io_.err(b"(98)Address in use: AH00072: make_sock: could not bind to address [::]:80\n")
    return 1


def server_version(shell: Shell, argv: list[str], io_: Io, *, line: str) -> int:
    """``redis-server --version``, ``postgres --version``: one line, else the server would
    start a second time beside the first (which the lab does not model)."""
    if any(a in ("-v", "--version", "-V") for a in argv[1:]):
        io_.out(f"{line}\n".encode())
        return 0
    return 0


def tools_for(
    image: ImageSpec, tag: str, data: dict[str, dict[str, str]], *, tty: bool
) -> dict[str, Tool]:
    """The image's own programs that answer: those it ships, at the version its tag runs."""
    version = image.version_of(tag)
    shipped = image.server_binaries() | set(image.binaries)
    every: dict[str, Tool] = {
        "nginx": functools.partial(nginx, version=version),
        "httpd": functools.partial(httpd, version=version),
        "apachectl": functools.partial(httpd, version=version),
        "redis-cli": functools.partial(exec_db_clients.redis_cli, data=data, tty=tty),
        "redis-server": functools.partial(
            server_version,
            line=f"Redis server v={version} sha=00000000:0 malloc=jemalloc-5.3.0 bits=64",
        ),
        "pg_isready": exec_db_clients.pg_isready,
        "psql": functools.partial(exec_db_clients.psql, version=version),
        "postgres": functools.partial(server_version, line=f"postgres (PostgreSQL) {version}"),
    }
    return {name: tool for name, tool in every.items() if name in shipped}
