"""A hard deadline over one HTTP request: when it passes, the request's socket is shut down.

requests' ``timeout`` bounds each socket operation, not the request: a server that answers
headers and then trickles one byte every 0.2 s (or trickles its headers) never lets one read wait
long enough to time out, and would hold the calling thread for as long as it likes. So each
request gets a ``Cutoff``: a timer that, at the deadline, shuts the connection's socket down in
both directions. The read that is blocked on it returns at once, the request fails, the caller
turns that into a timeout, and nothing is left reading afterwards.

The connection in use is learnt by the connection classes mounted by ``DeadlineAdapter``: the
request is sent from the calling thread, which has put its ``Cutoff`` in a thread-local.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

_current = threading.local()


class Cutoff:
    """Shuts down the socket of the request it watches once ``seconds`` have passed."""

    def __init__(self, seconds: float) -> None:
        self._lock = threading.Lock()
        self._connection: HTTPConnection | None = None
        self.fired = False
        self._timer = threading.Timer(max(seconds, 0.0), self._cut)
        self._timer.name = "prometheus-deadline"
        self._timer.daemon = True

    def watch(self, connection: HTTPConnection) -> None:
        with self._lock:
            self._connection = connection
            if self.fired:  # the deadline passed while connecting: cut it now
                _shut(connection)

    def _cut(self) -> None:
        with self._lock:
            self.fired = True
            if self._connection is not None:
                _shut(self._connection)

    @contextmanager
    def armed(self) -> Iterator[Cutoff]:
        """Runs the timer around the request made inside, and stops (and joins) it after: no
        thread outlives the request."""
        _current.cutoff = self
        self._timer.start()
        try:
            yield self
        finally:
            _current.cutoff = None
            self._timer.cancel()
            self._timer.join()


def _shut(connection: HTTPConnection) -> None:
    sock = connection.sock
    if sock is None:
        return
    with suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)  # wakes a recv blocked in another thread; close does not


def _register(connection: HTTPConnection) -> None:
    cutoff: Cutoff | None = getattr(_current, "cutoff", None)
    if cutoff is not None:
        cutoff.watch(connection)


class _Connection(HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _register(self)  # again: a deadline that passed while connecting cuts the new socket

    def request(self, *args: Any, **kwargs: Any) -> None:
        _register(self)
        super().request(*args, **kwargs)


class _TLSConnection(HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _register(self)  # again: a deadline that passed while connecting cuts the new socket

    def request(self, *args: Any, **kwargs: Any) -> None:
        _register(self)
        super().request(*args, **kwargs)


class _Pool(HTTPConnectionPool):
    ConnectionCls = _Connection


class _TLSPool(HTTPSConnectionPool):
    ConnectionCls = _TLSConnection


class DeadlineAdapter(HTTPAdapter):
    """An ``HTTPAdapter`` whose connections can be cut by the calling thread's ``Cutoff``."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _Pool, "https": _TLSPool}
