"""SPDY/3.1 framing, the stream multiplexing kubectl before 1.30 speaks for ``exec`` (and every
kubectl for ``port-forward``): enough of it for k8s.io/apimachinery's ``httpstream/spdy`` client
(moby/spdystream).

The client opens every stream (SYN_STREAM, its role in a ``streamtype`` header) and the server
accepts each with a SYN_REPLY; data frames carry the bytes, the FIN flag ends a direction; PING
is answered, SETTINGS and WINDOW_UPDATE are noted and ignored (spdystream does not hold a sender
to the window). Header blocks are zlib streams primed with the SPDY/3 dictionary, one stream per
direction for the whole connection.
"""

from __future__ import annotations

import asyncio
import struct
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = (
    1,
    2,
    3,
    4,
    6,
    7,
    8,
    9,
)
FLAG_FIN = 0x01
MAX_DATA = 16 * 1024

# The SPDY/3 header dictionary (draft-mbelshe-httpbis-spdy-00 §2.6.10.1): these names, each
# with a 4-byte big-endian length, then the literal tail.
_DICTIONARY_WORDS = [
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    *("200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"),
]
_DICTIONARY_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 "
    "Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 "
    "Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, "
    "Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = (
    b"".join(struct.pack(">I", len(w)) + w.encode() for w in _DICTIONARY_WORDS)
    + _DICTIONARY_TAIL.encode()
)


class SpdyError(Exception):
    pass


@dataclass
class Stream:
    """One client-opened stream: its headers, what it has sent, whether it ended."""

    stream_id: int
    headers: dict[str, str]
    incoming: asyncio.Queue[bytes | None] = field(default_factory=asyncio.Queue)
    closed_by_client: bool = False


Reader = Callable[[], Awaitable[bytes]]  # b"" at the end of the connection
Writer = Callable[[bytes], Awaitable[None]]


class Connection:
    """The server side of one SPDY connection over a byte transport."""

    def __init__(self, read: Reader, write: Writer) -> None:
        self._read = read
        self._write = write
        self._buffer = b""
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(zdict=DICTIONARY)
        self._lock = asyncio.Lock()
        self.streams: dict[int, Stream] = {}
        self.opened: asyncio.Queue[Stream] = asyncio.Queue()
        self.ended = asyncio.Event()

    # ------------------------------------------------------------ reading

    async def _exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            chunk = await self._read()
            if not chunk:
                raise EOFError
            self._buffer += chunk
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    async def serve(self) -> None:
        """Read frames until the client goes away."""
        try:
            while True:
                head = await self._exactly(8)
                length = int.from_bytes(head[5:8], "big")
                flags = head[4]
                body = await self._exactly(length)
                if head[0] & 0x80:
                    await self._control(int.from_bytes(head[2:4], "big"), flags, body)
                else:
                    await self._data(int.from_bytes(head[0:4], "big") & 0x7FFFFFFF, flags, body)
        except (EOFError, ConnectionResetError, SpdyError, zlib.error):
            pass
        finally:
            self.ended.set()
            for stream in self.streams.values():
                stream.incoming.put_nowait(None)

    async def _control(self, kind: int, flags: int, body: bytes) -> None:
        if kind == SYN_STREAM:
            stream_id = int.from_bytes(body[0:4], "big") & 0x7FFFFFFF
            headers = self._headers(body[10:])
            stream = Stream(stream_id, headers)
            self.streams[stream_id] = stream
            await self._send_control(SYN_REPLY, 0, struct.pack(">I", stream_id) + self._block({}))
            if flags & FLAG_FIN:
                stream.closed_by_client = True
                stream.incoming.put_nowait(None)
            self.opened.put_nowait(stream)
        elif kind == PING:
            await self._send_control(PING, 0, body)
        elif kind == RST_STREAM:
            stream_id = int.from_bytes(body[0:4], "big") & 0x7FFFFFFF
            found = self.streams.get(stream_id)
            if found is not None:
                found.incoming.put_nowait(None)
        elif kind == GOAWAY:
            raise EOFError
        elif kind == HEADERS:
            self._headers(body[4:])  # keeps the shared zlib stream in step

    async def _data(self, stream_id: int, flags: int, body: bytes) -> None:
        stream = self.streams.get(stream_id)
        if stream is None:
            return
        if body:
            stream.incoming.put_nowait(body)
        if flags & FLAG_FIN:
            stream.closed_by_client = True
            stream.incoming.put_nowait(None)

    def _headers(self, block: bytes) -> dict[str, str]:
        raw = self._inflate.decompress(block)
        count = int.from_bytes(raw[0:4], "big")
        headers: dict[str, str] = {}
        at = 4
        for _ in range(count):
            size = int.from_bytes(raw[at : at + 4], "big")
            name = raw[at + 4 : at + 4 + size].decode("latin-1").lower()
            at += 4 + size
            size = int.from_bytes(raw[at : at + 4], "big")
            headers[name] = raw[at + 4 : at + 4 + size].decode("latin-1")
            at += 4 + size
        return headers

    # ------------------------------------------------------------ writing

    def _block(self, headers: dict[str, str]) -> bytes:
        raw = struct.pack(">I", len(headers))
        for name, value in headers.items():
            raw += struct.pack(">I", len(name)) + name.encode()
            raw += struct.pack(">I", len(value)) + value.encode()
        return self._deflate.compress(raw) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    async def _send_control(self, kind: int, flags: int, body: bytes) -> None:
        head = struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(body))
        async with self._lock:
            await self._write(head + body)

    async def send(self, stream: Stream, data: bytes, *, fin: bool = False) -> None:
        """Data on a stream (in frames of at most 16 KiB); ``fin`` ends the server's side."""
        chunks = [data[i : i + MAX_DATA] for i in range(0, len(data), MAX_DATA)] or [b""]
        for index, chunk in enumerate(chunks):
            last = fin and index == len(chunks) - 1
            if not chunk and not last:
                continue
            head = struct.pack(
                ">II", stream.stream_id, ((FLAG_FIN if last else 0) << 24) | len(chunk)
            )
            async with self._lock:
                await self._write(head + chunk)

    async def go_away(self) -> None:
        last = max(self.streams, default=0)
        await self._send_control(GOAWAY, 0, struct.pack(">II", last, 0))
