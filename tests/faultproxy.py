"""A fault-injecting HTTP proxy between the product and the lab's API server.

Tests point a kubeconfig at the proxy (``FaultProxy.kubeconfig``) and switch faults at run
time, per request method and path pattern:

- ``delay``: wait N seconds, then forward (``release()`` cuts every wait short);
- ``drop``: forward the request to the lab, read its answer, then close the connection
  without answering — the write landed, the answer was lost;
- ``fail``: answer an HTTP error (503 by default) without forwarding anything — or, with
  ``forward=True``, after forwarding it (a gateway that times out on a write that landed),
  or with ``forward_after=N``, answer at once and forward N seconds later (or at
  ``release()``): the gateway gave up while the API server was still on its way to commit;
- ``garble``: forward the request, then answer 200 with a body that is not JSON;
- no rule: pass-through.

Every request is recorded (method, path, query, what the proxy did) so a test can count what
reached the lab — "exactly one PUT" is counted here, not trusted from the product. Plain
request/response only: watches and other streams are refused with 501.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from lab.runner import write_kubeconfig

FaultKind = Literal["delay", "drop", "fail"]
# "late": forwarded after the error was answered (``forward_after``).
Outcome = Literal["passed", "delayed", "dropped", "failed", "refused", "late"]
# Headers that belong to one connection, never forwarded.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "host",
    }
)


@dataclass
class Rule:
    """A fault for requests whose method is ``method`` (or ``*``) and whose path (without
    the query) matches the regular expression ``path``.

    ``forward`` (for ``fail``) sends the request to the lab before answering the error;
    ``forward_after`` answers the error first and sends the request that many seconds later.
    ``dry_run`` narrows a rule to server-dry-run requests (True) or real ones (False);
    ``times`` limits how many requests it affects; ``after`` arms it only once another rule
    has fired (a read that fails right after a dropped write, say)."""

    method: str
    path: str
    kind: FaultKind
    seconds: float = 0.0
    status: int = 503
    forward: bool = False
    forward_after: float | None = None
    body: bytes | None = None  # answered instead of a Status (``garble``)
    dry_run: bool | None = None
    times: int | None = None
    after: Rule | None = None
    hits: int = 0
    # Set by ``FaultProxy.open``: this rule's delays end now (others keep waiting).
    opened: threading.Event = field(default_factory=threading.Event)

    def matches(self, method: str, path: str, dry_run: bool) -> bool:
        if self.method not in ("*", method):
            return False
        if self.dry_run is not None and self.dry_run != dry_run:
            return False
        if self.times is not None and self.hits >= self.times:
            return False
        if self.after is not None and self.after.hits == 0:
            return False
        return re.search(self.path, path) is not None


@dataclass(frozen=True)
class Seen:
    """One request the proxy received, and what it did with it."""

    method: str
    path: str
    query: str
    dry_run: bool
    outcome: Outcome
    status: int | None  # the status the lab answered (None: not forwarded)


@dataclass
class _State:
    upstream_host: str
    upstream_port: int
    rules: list[Rule] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    released: threading.Event = field(default_factory=threading.Event)
    in_flight: int = 0
    sockets: set[socket.socket] = field(default_factory=set)
    late: list[threading.Thread] = field(default_factory=list)
    closing: bool = False


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # joined on close, after their sockets are shut
    state: _State

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a read timeout) before its answer came is no error here."""
        if isinstance(sys.exc_info()[1], BrokenPipeError | ConnectionResetError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 60
    # An answer leaves in two writes (headers, then body): with Nagle's algorithm the body
    # waits for the client's delayed ACK of the headers, about 40 ms on every request.
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        with self.server.state.lock:
            self.server.state.sockets.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server.state.lock:
                self.server.state.sockets.discard(self.connection)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the record of requests is ``FaultProxy.seen``."""

    def do_GET(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        state = self.server.state
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        dry_run = bool(query.get("dryRun"))
        body = self._body()
        if query.get("watch") in (["true"], ["1"]) or query.get("follow") == ["true"]:
            self._record(parts.path, parts.query, dry_run, "refused", None)
            self._answer(501, b"the fault proxy does not stream (watch/follow)")
            return
        with state.lock:
            rule = next(
                (r for r in state.rules if r.matches(self.command, parts.path, dry_run)), None
            )
            if rule is not None:
                rule.hits += 1
        if rule is not None and rule.kind == "fail" and rule.forward_after is not None:
            self._record(parts.path, parts.query, dry_run, "failed", None)
            self._fail(rule)
            request = _Request(self.command, self.path, self.headers.items(), body)
            late = threading.Thread(
                target=_forward_late, args=(state, request, rule.forward_after), daemon=True
            )
            with state.lock:
                state.late.append(late)
            late.start()
            return
        if rule is not None and rule.kind == "fail" and not rule.forward:
            self._record(parts.path, parts.query, dry_run, "failed", None)
            self._fail(rule)
            return
        with state.lock:
            state.in_flight += 1
        try:
            if rule is not None and rule.kind == "delay":
                _hold(state, rule)
            request = _Request(self.command, self.path, self.headers.items(), body)
            status_code, headers, answer = _forward(state, request)
        except (OSError, http.client.HTTPException) as error:
            self._record(parts.path, parts.query, dry_run, "refused", None)
            self._answer(502, f"the fault proxy cannot reach the lab: {error}".encode())
            return
        finally:
            with state.lock:
                state.in_flight -= 1
        if rule is not None and rule.kind == "drop":
            self._record(parts.path, parts.query, dry_run, "dropped", status_code)
            self.close_connection = True  # the write landed; its answer never leaves
            return
        if rule is not None and rule.kind == "fail":
            self._record(parts.path, parts.query, dry_run, "failed", status_code)
            self._fail(rule)  # the lab answered; the client hears an error instead
            return
        outcome: Outcome = "delayed" if rule is not None else "passed"
        self._record(parts.path, parts.query, dry_run, outcome, status_code)
        self.send_response(status_code)
        for name, value in headers:
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def _fail(self, rule: Rule) -> None:
        if rule.body is not None:
            self._answer(rule.status, rule.body, "application/json")
            return
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": f"the fault proxy answered {rule.status} in place of the API server",
            "reason": "ServiceUnavailable" if rule.status == 503 else "Timeout",
            "code": rule.status,
        }
        self._answer(rule.status, json.dumps(status).encode(), "application/json")

    def _answer(self, status: int, body: bytes, content_type: str = "text/plain") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _record(
        self, path: str, query: str, dry_run: bool, outcome: Outcome, status: int | None
    ) -> None:
        seen = Seen(self.command, path, query, dry_run, outcome, status)
        with self.server.state.lock:
            self.server.state.seen.append(seen)


@dataclass(frozen=True)
class _Request:
    method: str
    target: str  # path and query, as received
    headers: list[tuple[str, str]]
    body: bytes


def _hold(state: _State, rule: Rule) -> None:
    """Wait out a delay, cut short by ``release()`` (every rule) or ``open(rule)``."""
    deadline = time.monotonic() + rule.seconds
    while not (state.released.is_set() or rule.opened.is_set()):
        left = deadline - time.monotonic()
        if left <= 0:
            return
        rule.opened.wait(min(left, 0.05))


def _forward(state: _State, request: _Request) -> tuple[int, list[tuple[str, str]], bytes]:
    """Send one request to the lab; its status, headers and whole body."""
    upstream = http.client.HTTPConnection(state.upstream_host, state.upstream_port, timeout=60)
    try:
        headers = {k: v for k, v in request.headers if k.lower() not in HOP_BY_HOP}
        headers["Host"] = f"{state.upstream_host}:{state.upstream_port}"
        if request.body or request.method in ("PUT", "POST", "PATCH"):
            headers["Content-Length"] = str(len(request.body))
        upstream.request(request.method, request.target, body=request.body or None, headers=headers)
        response = upstream.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        upstream.close()


def _forward_late(state: _State, request: _Request, seconds: float) -> None:
    """The request the client was told failed reaches the lab after all (unless the proxy
    closes first)."""
    state.released.wait(seconds)
    if state.closing:
        return
    parts = urlsplit(request.target)
    dry_run = bool(parse_qs(parts.query).get("dryRun"))
    try:
        status: int | None = _forward(state, request)[0]
    except (OSError, http.client.HTTPException):
        status = None
    with state.lock:
        state.seen.append(Seen(request.method, parts.path, parts.query, dry_run, "late", status))


class FaultProxy:
    """The proxy, bound to a free port on 127.0.0.1, forwarding to ``upstream``."""

    def __init__(self, upstream: str, kubeconfig: Path, *, namespace: str = "hotel") -> None:
        target = urlsplit(upstream)
        if target.scheme != "http" or not target.hostname or not target.port:
            raise ValueError(f"the fault proxy forwards to http://HOST:PORT, not {upstream!r}")
        self._state = _State(target.hostname, target.port)
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = self._state
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.kubeconfig = write_kubeconfig(kubeconfig, self.url, namespace)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="fault-proxy", daemon=True
        )
        self._thread.start()

    # ------------------------------------------------------------------ faults

    def add(self, rule: Rule) -> Rule:
        """Add a rule; the first matching rule (in the order added) decides a request."""
        with self._state.lock:
            self._state.rules.append(rule)
        return rule

    def delay(
        self,
        method: str,
        path: str,
        seconds: float,
        *,
        dry_run: bool | None = None,
        times: int | None = None,
    ) -> Rule:
        return self.add(Rule(method, path, "delay", seconds=seconds, dry_run=dry_run, times=times))

    def drop(
        self, method: str, path: str, *, dry_run: bool | None = None, times: int | None = None
    ) -> Rule:
        return self.add(Rule(method, path, "drop", dry_run=dry_run, times=times))

    def fail(
        self,
        method: str,
        path: str,
        *,
        status: int = 503,
        forward: bool = False,
        forward_after: float | None = None,
        dry_run: bool | None = None,
        times: int | None = None,
        after: Rule | None = None,
    ) -> Rule:
        return self.add(
            Rule(
                method,
                path,
                "fail",
                status=status,
                forward=forward,
                forward_after=forward_after,
                dry_run=dry_run,
                times=times,
                after=after,
            )
        )

    def garble(
        self, method: str, path: str, *, dry_run: bool | None = None, times: int | None = None
    ) -> Rule:
        """Forward, then answer 200 with a body that is no JSON object at all."""
        return self.add(
            Rule(
                method,
                path,
                "fail",
                status=200,
                forward=True,
                body=b"<html><body>upstream hiccup</body></html>",
                dry_run=dry_run,
                times=times,
            )
        )

    def clear(self) -> None:
        """Back to pass-through (delays already waiting are released too)."""
        with self._state.lock:
            self._state.rules.clear()
        self.release()

    def release(self) -> None:
        """Cut every delay short, now and from now on."""
        self._state.released.set()

    def open(self, rule: Rule) -> None:
        """Cut the delays of one rule short, now and from now on; other rules keep holding
        (two held writes released in a chosen order)."""
        rule.opened.set()

    # ------------------------------------------------------------------ what happened

    def seen(
        self,
        method: str | None = None,
        path: str | None = None,
        *,
        dry_run: bool | None = None,
        outcome: Outcome | None = None,
    ) -> list[Seen]:
        """Requests received, in order, narrowed by method, path pattern, dry-run, outcome."""
        with self._state.lock:
            everything = list(self._state.seen)
        return [
            s
            for s in everything
            if (method is None or s.method == method)
            and (path is None or re.search(path, s.path))
            and (dry_run is None or s.dry_run == dry_run)
            and (outcome is None or s.outcome == outcome)
        ]

    def forwarded(self, method: str, path: str, *, dry_run: bool = False) -> list[Seen]:
        """Requests that reached the lab (answered there, whether or not the answer came
        back) — the writes the cluster really saw."""
        return [s for s in self.seen(method, path, dry_run=dry_run) if s.status is not None]

    @property
    def in_flight(self) -> int:
        """Requests the proxy is forwarding (or delaying) right now."""
        with self._state.lock:
            return self._state.in_flight

    # ------------------------------------------------------------------ life

    def wait_for_late(self, timeout: float = 30.0) -> None:
        """Wait until every late request (``forward_after``) has been forwarded."""
        with self._state.lock:
            late = list(self._state.late)
        for thread in late:
            thread.join(timeout)

    def close(self) -> None:
        self._state.closing = True  # late requests not yet sent are never sent
        self.release()
        self.wait_for_late()
        self._server.shutdown()
        with self._state.lock:
            open_sockets = list(self._state.sockets)
        for sock in open_sockets:
            with contextlib.suppress(OSError):  # already closed by its client
                sock.shutdown(socket.SHUT_RDWR)
        self._server.server_close()  # joins the handler threads
        self._thread.join(timeout=5)


@contextmanager
def fault_proxy(upstream: str, kubeconfig: Path) -> Iterator[FaultProxy]:
    proxy = FaultProxy(upstream, kubeconfig)
    try:
        yield proxy
    finally:
        proxy.close()
