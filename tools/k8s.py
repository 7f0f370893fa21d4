"""The one module that owns the ``kubernetes`` client.

It loads a kubeconfig (a path and context, or the default) or the in-cluster configuration,
speaks to the API through the dynamic client on plain dicts, and turns every client error into
the tool layer's own errors. The client is synchronous; async callers use ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import urllib3
import yaml
from kubernetes import client, config, dynamic
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from store.errors import Remedy
from tools import env, errors
from tools.objects import ObjectRef

_P = ParamSpec("_P")
_T = TypeVar("_T")


async def in_thread(func: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """Call the (synchronous) client from async code without blocking the event loop."""
    return await asyncio.to_thread(func, *args, **kwargs)


def _status_message(exc: ApiException) -> str:
    try:
        body = json.loads(exc.body or "{}")
        return str(body.get("message") or exc.reason)
    except (TypeError, ValueError):
        return str(exc.reason or exc)


def translate(exc: Exception, what: str) -> errors.ToolError:
    """Our error for a client error, worded for a human."""
    if isinstance(exc, ApiException):
        message = _status_message(exc)
        status = exc.status or 0
        if status == 404:
            return errors.NotFound(f"{what}: not found ({message})")
        if status == 409:
            return errors.Conflict(f"{what}: {message}")
        if status == 403:
            return errors.Forbidden(f"{what}: forbidden by the cluster ({message})")
        if status in (400, 422):
            return errors.Invalid(f"{what}: the cluster rejected it ({message})")
        if status in (401,):
            return errors.Forbidden(f"{what}: not authenticated ({message})")
        return errors.Unavailable(f"{what}: the API server answered {status} ({message})")
    if isinstance(exc, urllib3.exceptions.HTTPError | OSError):
        return errors.Unavailable(f"{what}: cannot reach the API server ({exc})")
    return errors.ToolError(f"{what}: {exc}")


def describe_source(kubeconfig: str | None, context: str | None, in_cluster: bool) -> str:
    """Which configuration was used, as a person would look for it."""
    if in_cluster:
        return "the in-cluster configuration"
    if kubeconfig:
        where = f"kubeconfig {kubeconfig}"
    elif os.environ.get("KUBECONFIG"):
        where = f"kubeconfig {os.environ['KUBECONFIG']} (from $KUBECONFIG)"
    else:
        where = f"kubeconfig {Path.home() / '.kube' / 'config'} (the default)"
    return where + (f", context {context}" if context else "")


def request_timeout() -> tuple[float, float]:
    """(connect, read) seconds for every API call: ``STRATUS_KUBE_TIMEOUT`` (read), default
    30, from 0.5 to 3600. An API server that accepts a connection and never answers must not
    hang Stratus; a write whose answer times out is settled by reading the object."""
    read = env.number("STRATUS_KUBE_TIMEOUT", default=30.0, low=0.5, high=3600.0)
    return (min(5.0, read), read)


def _as_dict(answer: Any, what: str) -> dict[str, Any]:
    """The answer as a dict; an answer that is not a Kubernetes object (a proxy's error page,
    a truncated body) is an unavailable server, not a crash."""
    try:
        value = answer.to_dict()
    except (AttributeError, TypeError, ValueError) as exc:
        raise errors.Unavailable(
            f"{what}: the API server's answer is not an object ({exc})"
        ) from exc
    if not isinstance(value, dict):
        raise errors.Unavailable(f"{what}: the API server's answer is not an object")
    return value


def _json_object(response: Any, what: str) -> dict[str, Any]:
    """A raw HTTP answer's body as a dict; anything else is an unavailable server."""
    try:
        value = json.loads(response.data)
    except (AttributeError, TypeError, ValueError) as exc:
        raise errors.Unavailable(f"{what}: the API server's answer is not JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise errors.Unavailable(f"{what}: the API server's answer is not an object")
    return value


class KubeClient:
    """Plain-dict access to one cluster."""

    def __init__(
        self, *, kubeconfig: str | None = None, context: str | None = None, in_cluster: bool = False
    ) -> None:
        configuration = client.Configuration()
        try:
            if in_cluster:
                config.load_incluster_config(client_configuration=configuration)
            else:
                # $KUBECONFIG is read now, not when the client library was imported (it
                # reads it once, at import): the file named in an error is the file used.
                config.load_kube_config(
                    config_file=kubeconfig or os.environ.get("KUBECONFIG") or None,
                    context=context,
                    client_configuration=configuration,
                )
        except (ConfigException, OSError, TypeError, ValueError, yaml.YAMLError) as exc:
            raise errors.Unavailable(
                f"cannot load {describe_source(kubeconfig, context, in_cluster)}: {exc}",
                remedy=Remedy.FIX_CONFIG,
            ) from exc
        # Only connection failures are retried: the request never left. A response lost after
        # a write was sent is never retried blindly (the retry would meet a 409 and the
        # applied write would be recorded as aborted); the executor resolves it by reading.
        configuration.retries = urllib3.Retry(
            total=2, connect=2, read=0, status=0, other=0, redirect=0, backoff_factor=0.1
        )
        self.api_client = client.ApiClient(configuration)
        self.timeout = request_timeout()
        # Discovery (which the dynamic client runs on its own) takes no per-call timeout:
        # give the connection pool a default so no request can wait for ever.
        rest = self.api_client.rest_client
        send = rest.request
        timeout = self.timeout

        def request_with_timeout(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("_request_timeout") is None:
                kwargs["_request_timeout"] = timeout
            return send(*args, **kwargs)

        rest.request = request_with_timeout  # type: ignore[method-assign]  # our client only
        self.host = configuration.host
        self._dynamic: dynamic.DynamicClient | None = None

    @property
    def dynamic(self) -> dynamic.DynamicClient:
        if self._dynamic is None:
            try:
                self._dynamic = dynamic.DynamicClient(self.api_client)
            except Exception as exc:
                raise translate(exc, f"discovery at {self.host}") from exc
        return self._dynamic

    def _resource(self, api_version: str, kind: str) -> Any:
        try:
            return self.dynamic.resources.get(api_version=api_version, kind=kind)
        except dynamic.exceptions.ResourceNotFoundError as exc:
            raise errors.NotFound(f"the cluster does not serve {kind} ({api_version})") from exc

    def get(self, ref: ObjectRef) -> dict[str, Any]:
        resource = self._resource(ref.api_version, ref.kind)
        try:
            found = resource.get(
                name=ref.name, namespace=ref.namespace or None, _request_timeout=self.timeout
            )
        except Exception as exc:
            raise translate(exc, str(ref)) from exc
        result: dict[str, Any] = _as_dict(found, str(ref))
        return result

    def find(self, ref: ObjectRef) -> dict[str, Any] | None:
        try:
            return self.get(ref)
        except errors.NotFound:
            return None

    def list(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        resource = self._resource(api_version, kind)
        what = f"{kind} in {namespace or 'all namespaces'}"
        try:
            # The raw answer, parsed once: the dynamic client's own objects cost more than the
            # request itself on a namespace of 1,000 pods.
            found = resource.get(
                namespace=namespace or None,
                label_selector=label_selector,
                field_selector=field_selector,
                _request_timeout=self.timeout,
                serialize=False,
            )
        except Exception as exc:
            raise translate(exc, what) from exc
        items: list[dict[str, Any]] = _json_object(found, what).get("items") or []
        for item in items:
            item.setdefault("kind", kind)
            item.setdefault("apiVersion", api_version)
        return items

    def replace(self, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        ref = ObjectRef(obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace", ""))
        resource = self._resource(obj["apiVersion"], obj["kind"])
        try:
            written = resource.replace(
                body=obj,
                namespace=ref.namespace or None,
                dry_run="All" if dry_run else None,
                _request_timeout=self.timeout,
            )
        except Exception as exc:
            raise translate(exc, str(ref)) from exc
        result: dict[str, Any] = _as_dict(written, str(ref))
        return result

    def create(self, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        namespace = obj["metadata"].get("namespace") or None
        resource = self._resource(obj["apiVersion"], obj["kind"])
        try:
            created = resource.create(
                body=obj,
                namespace=namespace,
                dry_run="All" if dry_run else None,
                _request_timeout=self.timeout,
            )
        except Exception as exc:
            raise translate(
                exc, f"creating {obj['kind'].lower()}/{obj['metadata']['name']}"
            ) from exc
        result: dict[str, Any] = _as_dict(created, f"creating {obj['kind'].lower()}")
        return result

    def delete(
        self,
        ref: ObjectRef,
        *,
        resource_version: str | None = None,
        uid: str | None = None,
        dry_run: bool = False,
    ) -> None:
        resource = self._resource(ref.api_version, ref.kind)
        body: dict[str, Any] = {
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "propagationPolicy": "Background",
        }
        preconditions = {"resourceVersion": resource_version, "uid": uid}
        if any(preconditions.values()):
            body["preconditions"] = {k: v for k, v in preconditions.items() if v}
        try:
            resource.delete(
                name=ref.name,
                namespace=ref.namespace or None,
                body=body,
                dry_run="All" if dry_run else None,
                _request_timeout=self.timeout,
            )
        except Exception as exc:
            raise translate(exc, f"deleting {ref}") from exc

    def read_log(
        self,
        namespace: str,
        pod: str,
        *,
        container: str | None = None,
        tail_lines: int | None = None,
        previous: bool = False,
        timestamps: bool = False,
    ) -> str:
        core = client.CoreV1Api(self.api_client)
        try:
            text: str = core.read_namespaced_pod_log(
                pod,
                namespace,
                container=container,
                tail_lines=tail_lines,
                previous=previous,
                timestamps=timestamps,
                _request_timeout=self.timeout,
            )
        except Exception as exc:
            raise translate(exc, f"logs of pod/{pod} in {namespace}") from exc
        return text

    def close(self) -> None:
        self.api_client.close()
