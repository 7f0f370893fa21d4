"""What a modeled redis server answers: the everyday commands over the keys one server pod
holds, as typed replies that ``redis-cli`` in a container prints and ``port-forward`` sends
on the wire (RESP), so a ``set`` by either is there for a ``get`` by the other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Reply:
    kind: str  # status, bulk, integer, array, error
    text: str | None = None
    number: int = 0
    items: list[str] = field(default_factory=list)


def run(command: list[str], keys: dict[str, str]) -> Reply:
    """One command against ``keys`` (the server's data, changed in place)."""
    if not command:
        return Reply("error", "ERR empty command")
    name, args = command[0].lower(), command[1:]
    if name == "ping":
        return Reply("bulk", args[0]) if args else Reply("status", "PONG")
    if name == "echo" and len(args) == 1:
        return Reply("bulk", args[0])
    if name == "set" and len(args) >= 2:
        keys[args[0]] = args[1]
        return Reply("status", "OK")
    if name == "get" and len(args) == 1:
        return Reply("bulk", keys.get(args[0]))
    if name in ("del", "unlink") and args:
        return Reply("integer", number=sum(keys.pop(k, None) is not None for k in args))
    if name == "exists" and args:
        return Reply("integer", number=sum(k in keys for k in args))
    if name in ("incr", "decr") and len(args) == 1:
        current = keys.get(args[0], "0")
        if not current.lstrip("-").isdigit():
            return Reply("error", "ERR value is not an integer or out of range")
        keys[args[0]] = str(int(current) + (1 if name == "incr" else -1))
        return Reply("integer", number=int(keys[args[0]]))
    if name == "dbsize":
        return Reply("integer", number=len(keys))
    if name == "keys" and len(args) == 1:
        pattern = re.compile(re.escape(args[0]).replace(r"\*", ".*").replace(r"\?", "."))
        return Reply("array", items=sorted(k for k in keys if pattern.fullmatch(k)))
    if name in ("flushall", "flushdb"):
        keys.clear()
        return Reply("status", "OK")
    if name == "info":
        return Reply("bulk", "# Server\r\nredis_version:7.2.4\r\nredis_mode:standalone\r\n")
    if name == "quit":
        return Reply("status", "OK")
    shown = " ".join(f"'{a}'" for a in args[:1])
    return Reply("error", f"ERR unknown command '{command[0]}', with args beginning with: {shown}")


def shown(reply: Reply, *, raw: bool) -> str:
    """How redis-cli prints a reply: raw when its output is not a terminal."""
    if reply.kind == "status":
        return reply.text or ""
    if reply.kind == "error":
        return reply.text or "" if raw else f"(error) {reply.text}"
    if reply.kind == "integer":
        return str(reply.number) if raw else f"(integer) {reply.number}"
    if reply.kind == "array":
        if raw:
            return "\n".join(reply.items)
        return "\n".join(f'{i}) "{k}"' for i, k in enumerate(reply.items, 1)) or "(empty array)"
    if reply.text is None:
        return "" if raw else "(nil)"
    return reply.text if raw else f'"{reply.text}"'


def encoded(reply: Reply) -> bytes:
    """A reply in RESP2, as the server writes it."""
    if reply.kind == "status":
        return f"+{reply.text}\r\n".encode()
    if reply.kind == "error":
        return f"-{reply.text}\r\n".encode()
    if reply.kind == "integer":
        return f":{reply.number}\r\n".encode()
    if reply.kind == "array":
        return f"*{len(reply.items)}\r\n".encode() + b"".join(_bulk(i) for i in reply.items)
    return b"$-1\r\n" if reply.text is None else _bulk(reply.text)


def _bulk(text: str) -> bytes:
    data = text.encode()
    return f"${len(data)}\r\n".encode() + data + b"\r\n"


def parse(buffer: bytes) -> tuple[list[list[str]], bytes]:
    """The complete commands at the start of ``buffer`` (RESP arrays, or inline lines as
    ``nc``/telnet send them) and the bytes left over."""
    commands: list[list[str]] = []
    while buffer:
        if buffer.startswith(b"*"):
            parsed = _array(buffer)
            if parsed is None:
                break
            command, buffer = parsed
            commands.append(command)
            continue
        line, sep, rest = buffer.partition(b"\n")
        if not sep:
            break
        buffer = rest
        words = line.decode("utf-8", "replace").strip().split()
        if words:
            commands.append(words)
    return commands, buffer


def _array(buffer: bytes) -> tuple[list[str], bytes] | None:
    head, sep, rest = buffer.partition(b"\r\n")
    if not sep or not head[1:].isdigit():
        return None
    items: list[str] = []
    for _ in range(int(head[1:])):
        size, sep, rest = rest.partition(b"\r\n")
        if not sep or not size.startswith(b"$") or not size[1:].isdigit():
            return None
        length = int(size[1:])
        if len(rest) < length + 2:
            return None
        items.append(rest[:length].decode("utf-8", "replace"))
        rest = rest[length + 2 :]
    return items, rest
