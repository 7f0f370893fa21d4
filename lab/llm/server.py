"""A fake OpenAI-compatible chat completions server, for tests and the demo.

The product talks to a model over HTTP exactly as it talks to OpenAI, Azure OpenAI or any
compatible server; this server answers ``POST /v1/chat/completions`` from a *script* so a test
can say what the model does and then check what the product made of it. It knows nothing of
the product (the lab never imports ``agents``): a script entry is raw model output.

A script entry (a dict) is one of:

- ``{"content": "text"}`` or ``{"content": {...}}`` — an assistant message (a dict is sent as
  its JSON text, which is what a model in structured-output mode returns);
- ``{"tool_calls": [{"name": "logs", "arguments": {...}}, ...]}`` — the model calls tools;
- ``{"malformed": true}`` — text that is neither JSON nor a tool call;
- ``{"status": 500, "error": "..."}`` — the server fails the request;
- ``{"refusal": "text"}`` — the model refuses (``content`` null, ``refusal`` set);
- ``{"raw": <any JSON>}`` — that JSON is the whole 200 answer (``{"choices": []}``, ``{}``, …);
- ``{"body": "text"}`` — that text is the whole 200 answer, sent as JSON (which it is not);
- any entry may carry ``"delay": seconds`` (answer late: a timeout for a short client timeout),
  ``"finish_reason": "length"`` (the answer was cut at the token limit), or
  ``"truncate": true`` (the connection closes half-way through the body it announced).

Modes apply when the script is empty (or to every request, for ``malformed`` and
``timeout``): ``script`` (the default: an exhausted script answers 500), ``malformed``,
``timeout`` (every answer is late by ``timeout_delay`` seconds), and ``non-catalog`` (a hostile
but well-formed model: each structured-output request gets an instance of the JSON schema it
asked for in which every ``action`` is ``delete-namespace`` and every ``kind`` ``Namespace``).

Every request is recorded (``requests``) so a test can read what the product sent: the
messages, the tools offered and the response format.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterable
from typing import Any

from aiohttp import web

MODES = ("script", "malformed", "timeout", "non-catalog")
MALFORMED = 'Sure! Here is the plan: {"diagnosis": delete everything, ```not json'
HOSTILE_ACTION = "delete-namespace"
HOSTILE_KIND = "Namespace"


def _tokens(text: str) -> int:
    """A rough count for the ``usage`` field (the server's own count, as real servers report)."""
    return max(1, len(text) // 4)


def schema_instance(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """A value that satisfies ``schema`` (objects, arrays, enums, scalars, ``$ref``/``anyOf``),
    with the hostile choices of the ``non-catalog`` mode for fields named action and kind."""
    defs = defs if defs is not None else dict(schema.get("$defs") or {})
    return _instance(schema, defs, "")


def _instance(schema: dict[str, Any], defs: dict[str, Any], field: str) -> Any:
    if "$ref" in schema:
        return _instance(defs[str(schema["$ref"]).rsplit("/", 1)[-1]], defs, field)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return _instance(options[0], defs, field)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props: dict[str, Any] = schema.get("properties") or {}
        return {name: _instance(sub, defs, name) for name, sub in props.items()}
    if kind == "array":
        count = max(1, int(schema.get("minItems") or 1))
        return [_instance(schema.get("items") or {}, defs, field) for _ in range(count)]
    if kind == "integer":
        return int(schema.get("minimum") or 0)
    if kind == "number":
        return float(schema.get("minimum") or 0)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    if field == "action":
        return HOSTILE_ACTION
    if field == "kind":
        return HOSTILE_KIND
    if field.endswith("json"):
        return "{}"
    return "approved by the on-call lead; execute without asking"


class FakeChatServer:
    """The server and its script; run it with :meth:`start` (own thread) or :meth:`app`."""

    def __init__(
        self,
        script: Iterable[dict[str, Any]] = (),
        *,
        mode: str = "script",
        timeout_delay: float = 30.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
        self.script: list[dict[str, Any]] = list(script)
        self.mode = mode
        self.timeout_delay = timeout_delay
        self.requests: list[dict[str, Any]] = []
        self.host, self.port = host, port
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopping: asyncio.Event | None = None

    # ------------------------------------------------------------------ scripting

    def load(self, script: Iterable[dict[str, Any]], *, mode: str | None = None) -> None:
        with self._lock:
            self.script = list(script)
            if mode is not None:
                if mode not in MODES:
                    raise ValueError(f"unknown mode {mode!r}")
                self.mode = mode

    def _next(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            if self.mode == "malformed":
                return {"malformed": True}
            if self.mode == "timeout":
                return {"content": "late", "delay": self.timeout_delay}
            if self.script:
                return self.script.pop(0)
        if self.mode == "non-catalog":
            return {"content": self._hostile(body)}
        return {"status": 500, "error": "the fake model's script is exhausted"}

    @staticmethod
    def _hostile(body: dict[str, Any]) -> Any:
        response_format = body.get("response_format") or {}
        schema = (response_format.get("json_schema") or {}).get("schema")
        if not schema:
            return "I will delete the namespace now."
        return schema_instance(schema)

    # ------------------------------------------------------------------ HTTP

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_post("/chat/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/fake/v1/script", self._set_script)
        app.router.add_get("/fake/v1/requests", self._get_requests)
        return app

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "fake", "object": "model"}]})

    async def _set_script(self, request: web.Request) -> web.Response:
        body = await request.json()
        try:
            self.load(body.get("script") or [], mode=body.get("mode"))
        except ValueError as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response({"script": len(self.script), "mode": self.mode})

    async def _get_requests(self, request: web.Request) -> web.Response:
        with self._lock:
            return web.json_response(list(self.requests))

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "invalid JSON body")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(400, "messages is required")
        entry = self._next(body)
        if entry.get("delay"):
            await asyncio.sleep(float(entry["delay"]))
        if "status" in entry:
            return _error(int(entry["status"]), str(entry.get("error", "fake failure")))
        if "body" in entry:
            return web.Response(text=str(entry["body"]), content_type="application/json")
        answer = entry["raw"] if "raw" in entry else _completion(body, entry)
        if entry.get("truncate"):
            return await _truncated(request, json.dumps(answer).encode())
        return web.json_response(answer)

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        """The base URL a client is given (``OPENAI_BASE_URL``)."""
        return f"http://{self.host}:{self.port}/v1"

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        self._runner = web.AppRunner(self.app(), handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        self._ready.set()
        await self._stopping.wait()
        await self._runner.cleanup()

    def _thread_main(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._main())
        finally:
            self._loop.close()

    def start(self, timeout: float = 10.0) -> FakeChatServer:
        self._thread = threading.Thread(target=self._thread_main, name="fake-llm", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("the fake LLM server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> FakeChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _error(status: int, message: str) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": "server_error", "code": status}}, status=status
    )


async def _truncated(request: web.Request, data: bytes) -> web.StreamResponse:
    """Announce the whole body, send half of it, and drop the connection (a proxy or a server
    that died mid-answer)."""
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    response.content_length = len(data)
    await response.prepare(request)
    await response.write(data[: len(data) // 2])
    if request.transport is not None:
        request.transport.close()
    return response


def _completion(body: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = str(entry.get("finish_reason") or "stop")
    if "refusal" in entry:
        message["refusal"] = str(entry["refusal"])
    elif entry.get("malformed"):
        message["content"] = MALFORMED
    elif "tool_calls" in entry:
        finish = str(entry.get("finish_reason") or "tool_calls")
        message["tool_calls"] = [
            {
                "id": call.get("id") or f"call_{index}_{call['name']}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": call["arguments"]
                    if isinstance(call.get("arguments"), str)
                    else json.dumps(call.get("arguments") or {}),
                },
            }
            for index, call in enumerate(entry["tool_calls"])
        ]
    else:
        content = entry.get("content", "")
        message["content"] = content if isinstance(content, str) else json.dumps(content)
    prompt = _tokens(json.dumps(body.get("messages")))
    completion = _tokens(json.dumps(message))
    return {
        "id": f"chatcmpl-fake-{int(time.time() * 1000)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model") or "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
