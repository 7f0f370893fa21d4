"""The HTTP face of the emulator: Kubernetes REST paths routed onto :class:`ApiService`.

Every error leaves as a ``Status`` object with the right code; an unexpected exception is a
500 ``InternalError`` and never stops the server.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from lab.cluster import (
    access_reviews,
    audit,
    conversion,
    discovery,
    impersonation,
    logstream,
    patching,
    protobuf,
    rbac,
    request_options,
    resources,
    streaming,
    tables,
    watch,
)
from lab.cluster.api import ApiService
from lab.cluster.errors import ApiError, bad_request, method_not_allowed
from lab.cluster.resources import ResourceType
from lab.cluster.selectors import parse_field_selector, parse_label_selector

log = logging.getLogger("stratus.lab.server")
JSON = "application/json"
_USER = web.RequestKey("user", rbac.UserInfo)


class Backend(Protocol):
    """What the HTTP layer needs from the running cluster."""

    api: ApiService

    def read_log(
        self,
        namespace: str,
        pod: str,
        container: str | None,
        *,
        previous: bool,
        tail_lines: int | None,
    ) -> str: ...

    def log_source(
        self, namespace: str, pod: str, container: str | None, *, previous: bool
    ) -> logstream.LogContainer: ...

    def after_write(self) -> None: ...

    def now(self) -> float: ...


@dataclass(frozen=True)
class Target:
    rt: ResourceType
    namespace: str
    name: str
    subresource: str


def _dump(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def _json_response(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=_dump(body), status=status, content_type=JSON)


def _error_response(error: ApiError) -> web.Response:
    # Go's json.Encoder ends the Status with a newline; clients that print bodies show it.
    return web.Response(body=_dump(error.status()) + b"\n", status=error.code, content_type=JSON)


def _object_ref(path: str) -> dict[str, str] | None:
    """The audit event's objectRef for a resource path (None for anything else)."""
    parts = [p for p in path.split("/") if p]
    try:
        if parts[:2] == ["api", "v1"] and len(parts) > 2:
            target = parse_target("", "v1", parts[2:])
        elif parts[:1] == ["apis"] and len(parts) > 3:
            target = parse_target(parts[1], parts[2], parts[3:])
        else:
            return None
    except ApiError:
        return None
    ref = {
        "resource": target.rt.plural,
        "namespace": target.namespace,
        "name": target.name,
        "apiGroup": target.rt.group,
        "apiVersion": target.rt.version,
    }
    if target.subresource:
        ref["subresource"] = target.subresource
    return {k: v for k, v in ref.items() if v}


def parse_target(group: str, version: str, parts: list[str]) -> Target:
    """Map the path segments after ``/api/v1`` or ``/apis/{g}/{v}`` onto a resource target."""

    def lookup(plural: str) -> ResourceType:
        rt = resources.by_path(group, version, plural)
        if rt is None:
            if plural == "namespaces" and len(parts) >= 3:
                plural = parts[2]  # /namespaces/{ns}/{plural} of a type this group lacks
            gv = f"{group}/{version}" if group else version
            raise ApiError(
                404,
                "NotFound",
                f"the server could not find the requested resource ({plural} in {gv})",
            )
        return rt

    if len(parts) >= 3 and parts[0] == "namespaces":
        candidate = resources.by_path(group, version, parts[2])
        if candidate is not None and candidate.namespaced:
            namespace, rest = parts[1], parts[2:]
            rt = candidate
            name = rest[1] if len(rest) > 1 else ""
            sub = rest[2] if len(rest) > 2 else ""
            if len(rest) > 3:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return Target(rt, namespace, name, sub)
    if not parts:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    rt = lookup(parts[0])
    name = parts[1] if len(parts) > 1 else ""
    sub = parts[2] if len(parts) > 2 else ""
    if len(parts) > 3:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return Target(rt, "", name, sub)


def _wants_table(request: web.Request) -> bool:
    return "as=Table" in request.headers.get("Accept", "")


class ApiHttpServer:
    """Builds the aiohttp application for one backend."""

    def __init__(self, backend: Backend, extra_routes: list[web.RouteDef] | None = None) -> None:
        self.backend = backend
        self.app = web.Application(client_max_size=request_options.MAX_BODY)
        self.app.router.add_routes(extra_routes or [])
        self.app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._watchers: set[asyncio.Task[Any]] = set()
        self.app.on_shutdown.append(self._cancel_watches)

    async def _cancel_watches(self, app: web.Application) -> None:
        """Open watches end with the server instead of outliving its event loop."""
        for task in list(self._watchers):
            task.cancel()

    @property
    def api(self) -> ApiService:
        return self.backend.api

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        sender: rbac.UserInfo | None = None
        try:
            sender = self.api.access.authenticate(request.headers.get("Authorization"))
            request[_USER] = impersonation.impersonate(self.api.access, sender, request.headers)
            response = await self._route(request)
            self._audit(request, sender, response.status, response)
            return response
        except ApiError as error:
            if sender is not None:
                self._audit(request, sender, error.code)
            return _error_response(error)
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.exception("internal error serving %s %s", request.method, request.path)
            return _error_response(
                ApiError(500, "InternalError", f"Internal error occurred: {exc}")
            )

    def _audit(
        self,
        request: web.Request,
        sender: rbac.UserInfo,
        code: int,
        response: web.StreamResponse | None = None,
    ) -> None:
        """A write, refused or not, with who sent it and whom it acted as."""
        if not audit.is_write(request.method):
            return
        acting = request.get(_USER, sender)
        object_ref = _object_ref(request.path)
        if object_ref is not None and "name" not in object_ref:
            # A create names its object in the body; the real audit log fills it in too.
            body = response.body if isinstance(response, web.Response) else None
            try:
                created = json.loads(body) if isinstance(body, bytes) and code < 300 else None
                name = created["metadata"]["name"] if isinstance(created, dict) else None
            except (ValueError, KeyError, TypeError):
                name = None
            if isinstance(name, str):
                object_ref["name"] = name
        self.api.audit.record(
            method=request.method,
            uri=request.path_qs,
            user=sender,
            acting=acting,
            code=code,
            object_ref=object_ref,
            stamp=self.api.clock.timestamp(),
        )

    async def _route(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        if not (parts[:1] == ["api"] and len(parts) > 2) and not (
            parts[:1] == ["apis"] and len(parts) > 3
        ):  # a non-resource path: discovery, version, health, OpenAPI
            self.api.access.check(
                request[_USER], rbac.Attributes(request.method.lower(), path=request.path)
            )
        if not parts:
            return _json_response(
                {"paths": ["/api", "/api/v1", "/apis", "/version", "/openapi/v3", "/healthz"]}
            )
        head = parts[0]
        if head in ("healthz", "readyz", "livez"):
            return web.Response(text="ok")
        if head == "version":
            return _json_response(discovery.SERVER_VERSION)
        if head == "openapi":
            if parts[1:] == ["v2"]:
                protobuf = "protobuf" in request.headers.get("Accept", "")
                return web.Response(
                    body=discovery.openapi_v2(protobuf),
                    content_type=(
                        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
                        if protobuf
                        else JSON
                    ),
                )
            return self._openapi(parts[1:])
        if head == "api":
            if len(parts) == 1:
                return _json_response(discovery.core_versions(request.host))
            if parts[1] != "v1":
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            if len(parts) == 2:
                return _json_response(discovery.resource_list("", "v1"))
            return await self._resource(request, parse_target("", "v1", parts[2:]))
        if head == "apis":
            if len(parts) == 1:
                return _json_response(discovery.group_list())
            if len(parts) == 2:
                found = discovery.group(parts[1])
                if found is None:
                    raise ApiError(
                        404, "NotFound", "the server could not find the requested resource"
                    )
                return _json_response(found)
            if len(parts) == 3:
                listing = discovery.resource_list(parts[1], parts[2])
                if listing is None:
                    raise ApiError(
                        404, "NotFound", "the server could not find the requested resource"
                    )
                return _json_response(listing)
            return await self._resource(request, parse_target(parts[1], parts[2], parts[3:]))
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    def _openapi(self, parts: list[str]) -> web.Response:
        if parts == ["v3"]:
            return _json_response(discovery.openapi_v3_root())
        if len(parts) >= 3 and parts[0] == "v3":
            rest = parts[1:]
            group_name, version = (
                ("", rest[1])
                if rest[0] == "api"
                else (rest[1], rest[2])
                if len(rest) >= 3
                else ("?", "?")
            )
            doc = discovery.openapi_v3_group_version(group_name, version)
            if doc is not None:
                return _json_response(doc)
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    # ------------------------------------------------------------ resources

    async def _resource(self, request: web.Request, target: Target) -> web.StreamResponse:
        method = request.method
        rt, ns, name, sub = target.rt, target.namespace, target.name, target.subresource
        if sub and sub not in rt.subresources:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        verb = {
            "GET": "get"
            if name
            else ("watch" if request.query.get("watch") in ("true", "1") else "list"),
            "POST": "create",
            "PUT": "update",
            "PATCH": "patch",
            "DELETE": "delete" if name else "deletecollection",
        }.get(method)
        if verb is None or (verb not in rt.verbs and not sub):
            raise method_not_allowed(
                "the server does not allow this method on the requested resource"
            )
        user = request[_USER]
        self.api.authorize(verb, rt, ns, name, subresource=sub, user=user)
        if rt.plural in resources.REVIEW_KINDS or sub == "token":
            return await self._review(request, target, user)
        if sub == "log":
            return await self._log(request, target)
        if sub in streaming.STREAMING:
            return await streaming.serve(request, self.backend, self.api.get(rt, ns, name), sub)
        if sub == "scale":
            return await self._scale(request, target)
        if sub == "eviction" and method == "POST":
            eviction = await _delete_options(request)
            options = eviction.get("deleteOptions") or {}
            dry_run = request_options.dry_run(request) or (
                isinstance(options, dict) and request_options.options_dry_run(options)
            )
            evict = getattr(self.backend, "evict", None)  # a cluster that honours budgets
            if evict is not None:
                evict(ns, name, dry_run=dry_run)
            elif not dry_run:
                self.api.delete(rt, ns, name)
            if not dry_run:
                self.backend.after_write()
            done = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
            return _json_response({**done, "code": 201}, 201)
        if method == "GET":
            if name:
                return self._object_response(request, rt, self.api.get(rt, ns, name))
            if verb == "watch":
                return await watch.serve_watch(
                    request,
                    self.api,
                    rt,
                    ns,
                    lambda objects: self._table(request, rt, objects),
                    self._watchers,
                )
            return self._list(request, rt, ns)
        dry_run = request_options.dry_run(request)
        if method == "POST" and not name:
            obj = self.api.create(
                rt,
                ns,
                await request_options.read_object(request),
                dry_run=dry_run,
                manager=request_options.field_manager(request),
            )
            return self._written(request, rt, obj, 201, dry_run)
        if method == "PUT" and name:
            obj = self.api.update(
                rt,
                ns,
                name,
                await request_options.read_object(request),
                subresource=sub,
                dry_run=dry_run,
                manager=request_options.field_manager(request),
            )
            return self._written(request, rt, obj, 200, dry_run)
        if method == "PATCH" and name:
            body = await request_options.read_body(request)
            content_type = request.headers.get("Content-Type", "")
            if content_type.split(";")[0].strip() == patching.APPLY_PATCH and not sub:
                obj, created = self.api.apply(
                    rt,
                    ns,
                    name,
                    body,
                    manager=request.query.get("fieldManager", ""),
                    force=request_options.force(request),
                    dry_run=dry_run,
                )
                return self._written(request, rt, obj, 201 if created else 200, dry_run)
            obj = self.api.patch(
                rt,
                ns,
                name,
                body,
                content_type,
                subresource=sub,
                dry_run=dry_run,
                manager=request_options.field_manager(request),
            )
            return self._written(request, rt, obj, 200, dry_run)
        if method == "DELETE" and name:
            options = await _delete_options(request)
            if request.query.get("propagationPolicy"):
                options["propagationPolicy"] = request.query["propagationPolicy"]
            grace = request_options.grace_period(request)
            if grace is not None:
                options["gracePeriodSeconds"] = grace
            dry_run = dry_run or request_options.options_dry_run(options)
            obj = self.api.delete(rt, ns, name, options=options, dry_run=dry_run)
            return self._written(request, rt, obj, 200, dry_run)
        if method == "DELETE":
            labels = parse_label_selector(request.query.get("labelSelector"))
            fields = parse_field_selector(
                request.query.get("fieldSelector"), rt.field_selectors, rt.kind
            )
            dry_run = dry_run or request_options.options_dry_run(await _delete_options(request))
            gone = self.api.delete_collection(rt, ns, labels, fields, dry_run=dry_run)
            if not dry_run:
                self.backend.after_write()
            return _json_response(
                {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": {}, "items": gone}
            )
        raise method_not_allowed(f"{method} is not supported on this path")

    async def _review(
        self, request: web.Request, target: Target, user: rbac.UserInfo
    ) -> web.Response:
        """Access reviews, SelfSubjectReview, TokenReview and TokenRequest: answered, not stored."""
        if request.method != "POST" or (target.name and not target.subresource):
            raise method_not_allowed(
                "the server does not allow this method on the requested resource"
            )
        body = await request_options.read_object(request) or {}
        if not isinstance(body, dict):
            raise bad_request("the request body must be an object")
        timestamp = self.api.clock.timestamp()
        if target.subresource == "token":
            account = self.api.get(target.rt, target.namespace, target.name)
            answer = access_reviews.token_request(
                self.api.access, account, body, timestamp, self.api.clock.timestamp
            )
        else:
            answer = access_reviews.review(
                self.api.access, user, target.rt.plural, target.namespace, body, timestamp
            )
            answer["kind"], answer["apiVersion"] = target.rt.kind, target.rt.api_version
        return _json_response(answer, 201)

    def _written(
        self,
        request: web.Request,
        rt: ResourceType,
        obj: dict[str, Any],
        status: int,
        dry_run: bool,
    ) -> web.Response:
        if not dry_run:
            self.backend.after_write()
        return self._object_response(request, rt, obj, status)

    def _object_response(
        self, request: web.Request, rt: ResourceType, obj: dict[str, Any], status: int = 200
    ) -> web.Response:
        if _wants_table(request):
            return _json_response(self._table(request, rt, [obj]), status)
        if conversion.converts(rt):
            return _json_response(conversion.from_storage(rt, obj), status)
        return web.Response(
            body=self.api.store.encoded(rt.key, obj), status=status, content_type=JSON
        )

    def _table(
        self, request: web.Request, rt: ResourceType, objects: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return tables.table(
            rt,
            [conversion.from_storage(rt, o) for o in objects],
            self.backend.now(),
            resource_version=str(self.api.store.resource_version),
            include_object=request.query.get("includeObject", "Metadata"),
        )

    def _list(self, request: web.Request, rt: ResourceType, ns: str) -> web.Response:
        labels = parse_label_selector(request.query.get("labelSelector"))
        fields = parse_field_selector(
            request.query.get("fieldSelector"), rt.field_selectors, rt.kind
        )
        items = self.api.list_objects(rt, ns or None, labels, fields)
        rv = str(self.api.store.resource_version)
        if _wants_table(request):
            return _json_response(self._table(request, rt, items))
        if conversion.converts(rt):
            items = [conversion.from_storage(rt, o) for o in items]
        store = self.api.store
        head = _dump(
            {
                "kind": rt.list_kind,
                "apiVersion": rt.api_version,
                "metadata": {"resourceVersion": rv},
            }
        )[:-1]
        body = b"".join(
            (head, b',"items":[', b",".join(store.encoded(rt.key, o) for o in items), b"]}")
        )
        return web.Response(body=body, content_type=JSON)

    async def _scale(self, request: web.Request, target: Target) -> web.Response:
        rt, ns, name = target.rt, target.namespace, target.name
        if request.method == "GET":
            return _json_response(self.api.get_scale(rt, ns, name))
        dry_run = request_options.dry_run(request)
        if request.method == "PUT":
            scale = await request_options.read_object(request)
        elif request.method == "PATCH":
            body = await request_options.read_body(request)
            scale = patching.apply_patch(
                self.api.get_scale(rt, ns, name), body, request.headers.get("Content-Type", "")
            )
        else:
            raise method_not_allowed(f"{request.method} is not supported on scale")
        if not isinstance(scale, dict):
            raise bad_request("the request body must be a Scale object")
        result = self.api.write_scale(
            rt, ns, name, scale, dry_run=dry_run, manager=request_options.field_manager(request)
        )
        if not dry_run:
            self.backend.after_write()
        return _json_response(result)

    async def _log(self, request: web.Request, target: Target) -> web.StreamResponse:
        return await logstream.serve_log(
            request,
            self.backend,
            target.namespace,
            target.name,
            lambda: self.api.get(target.rt, target.namespace, target.name),
        )


async def serve(
    app: web.Application,
    host: str,
    port: int,
    started: Callable[[int], Awaitable[None] | None] | None = None,
) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    await site.start()
    bound = port
    server = getattr(site, "_server", None)
    if server is not None and server.sockets:
        bound = server.sockets[0].getsockname()[1]
    if started is not None:
        result = started(bound)
        if asyncio.iscoroutine(result):
            await result
    return runner


async def _delete_options(request: web.Request) -> dict[str, Any]:
    """A DELETE's body: DeleteOptions in JSON (or YAML) or protobuf; none is ``{}``."""
    raw = await request_options.read_body(request)
    if not raw.strip():
        return {}
    options = (
        protobuf.decode_object(raw)
        if protobuf.is_protobuf(request.headers.get("Content-Type", ""))
        else request_options.decode_json(raw)
    )
    if not isinstance(options, dict):
        raise bad_request("DeleteOptions must be an object")
    return options
