"""The one module that owns the ``kubernetes`` client.

It loads a kubeconfig (a path and context, or the default) or the in-cluster configuration,
speaks to the API through the dynamic client on plain dicts, and turns every client error into
the tool layer's own errors. The client is synchronous; async callers use ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import urllib3
import yaml
from kubernetes import client, config, dynamic
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from store.errors import Remedy
from tools import api_errors, env, errors, incluster
from tools.identity import KubeIdentity
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


# A namespace is a DNS label; an object's name may hold more (a ClusterRole's ':'), but never
# what would change the URL it is sent in: the kubernetes client puts both into the request's
# path unquoted, so '../../api/v1/secrets?x=' as a namespace read every Secret (an outside
# tester's finding). Every call below checks what it puts in a path, whoever passed it.
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_UNSAFE = re.compile(r"[/%?#\\\s\x00-\x1f\x7f]")


def path_safe(*, namespace: str | None = None, name: str | None = None) -> None:
    """Refuse a namespace or a name that is not one (``errors.Invalid``), before any request."""
    if namespace and (len(namespace) > 63 or not _LABEL.fullmatch(namespace)):
        raise errors.Invalid(
            f"{namespace[:80]!r} is not a namespace: lower-case letters, digits and '-', "
            "at most 63 characters"
        )
    if name is not None and (not name or name in (".", "..") or _UNSAFE.search(name)):
        raise errors.Invalid(f"{name[:80]!r} is not an object's name")


def translate(exc: Exception, what: str) -> errors.ToolError:
    """Our error for a client error, worded for a human."""
    if isinstance(exc, ApiException):
        message = _status_message(exc)
        status = exc.status or 0
        api_errors.record(status)
        if status == 404:
            return errors.NotFound(f"{what}: not found ({message})")
        if status == 409:
            return errors.Conflict(f"{what}: {message}")
        if status == 403:
            return errors.Forbidden(
                f"{what}: forbidden by the cluster ({message})", details={"cluster": message}
            )
        if status in (400, 422):
            return errors.Invalid(f"{what}: the cluster rejected it ({message})")
        if status in (401,):
            return errors.Unauthorized(f"{what}: not authenticated ({message})")
        return errors.Unavailable(f"{what}: the API server answered {status} ({message})")
    if isinstance(exc, urllib3.exceptions.HTTPError | OSError):
        api_errors.record(api_errors.UNREACHABLE)
        return errors.Unavailable(f"{what}: cannot reach the API server ({exc})")
    return errors.ToolError(f"{what}: {exc}")


def use_in_cluster(kubeconfig: str | None) -> bool:
    """No kubeconfig named or present, and the kubelet's service variables set: the pod's
    ServiceAccount (``tools.incluster``)."""
    return incluster.chosen(
        kubeconfig=kubeconfig,
        env=os.environ,
        default_kubeconfig_exists=(Path.home() / ".kube" / "config").exists(),
    )


def describe_source(kubeconfig: str | None, context: str | None, in_cluster: bool) -> str:
    """Which configuration was used, as a person would look for it."""
    if in_cluster:
        return f"the in-cluster configuration (ServiceAccount in {incluster.account_dir()})"
    if kubeconfig:
        where = f"kubeconfig {kubeconfig}"
    elif os.environ.get("KUBECONFIG"):
        where = f"kubeconfig {os.environ['KUBECONFIG']} (from $KUBECONFIG)"
    else:
        where = f"kubeconfig {Path.home() / '.kube' / 'config'} (the default)"
    return where + (f", context {context}" if context else "")


def context_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace a command means when it names none: the one the kubeconfig's context
    (``context``, else the current one) sets, else ``default`` — what kubectl does. A
    kubeconfig that does not load also means ``default`` here: the client that loads it next
    says what is wrong with it. In a pod without a kubeconfig: the pod's namespace."""
    if context is None and use_in_cluster(kubeconfig):
        return incluster.namespace(incluster.account_dir())
    try:
        contexts, current = config.list_kube_config_contexts(
            config_file=kubeconfig or os.environ.get("KUBECONFIG") or None
        )
    except (ConfigException, OSError, TypeError, ValueError, yaml.YAMLError):
        return "default"
    chosen = next((c for c in contexts or [] if c.get("name") == context), None)
    entry = chosen if context else current
    body = entry.get("context") if isinstance(entry, dict) else None
    namespace = body.get("namespace") if isinstance(body, dict) else None
    return namespace if isinstance(namespace, str) and namespace else "default"


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
        self,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        in_cluster: bool | None = None,
    ) -> None:
        """``in_cluster``: None decides as kubectl would (``use_in_cluster``)."""
        configuration = client.Configuration()
        if in_cluster is None:
            in_cluster = context is None and use_in_cluster(kubeconfig)
        self.in_cluster = in_cluster
        # The pod's namespace in a pod (where its Lease lives), else None.
        self.pod_namespace: str | None = None
        try:
            if in_cluster:
                incluster.configure(configuration)
                self.pod_namespace = incluster.namespace(incluster.account_dir())
            else:
                # $KUBECONFIG is read now, not when the client library was imported (it
                # reads it once, at import): the file named in an error is the file used.
                config.load_kube_config(
                    config_file=kubeconfig or os.environ.get("KUBECONFIG") or None,
                    context=context,
                    client_configuration=configuration,
                )
        except (
            ConfigException,
            incluster.InClusterError,
            OSError,
            TypeError,
            ValueError,
            yaml.YAMLError,
        ) as exc:
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
        # Whom the calls of this thread are sent as (``acting_as``): per thread, so a read
        # another thread makes meanwhile goes out as Stratus itself.
        acting = self._acting = threading.local()

        def request_with_timeout(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("_request_timeout") is None:
                kwargs["_request_timeout"] = timeout
            identity: KubeIdentity | None = getattr(acting, "identity", None)
            if identity is not None:
                # A multi-valued header dict: urllib3 sends each group as its own header.
                headers = urllib3.HTTPHeaderDict(kwargs.get("headers") or {})
                for name, value in identity.headers():
                    headers.add(name, value)
                kwargs["headers"] = headers
            return send(*args, **kwargs)

        rest.request = request_with_timeout  # type: ignore[method-assign]  # our client only
        self.host = configuration.host
        self._dynamic: dynamic.DynamicClient | None = None

    @contextlib.contextmanager
    def acting_as(self, identity: KubeIdentity | None) -> Iterator[None]:
        """Send this thread's calls in the block as ``identity`` (``Impersonate-User`` and
        ``Impersonate-Group``); ``None`` sends them as Stratus itself."""
        previous = getattr(self._acting, "identity", None)
        self._acting.identity = identity
        try:
            yield
        finally:
            self._acting.identity = previous

    @property
    def dynamic(self) -> dynamic.DynamicClient:
        if self._dynamic is None:
            try:
                self._dynamic = dynamic.DynamicClient(self.api_client)
            except Exception as exc:
                raise translate(exc, f"discovery at {self.host}") from exc
        return self._dynamic

    def _resource(self, api_version: str, kind: str) -> Any:
        client = self.dynamic  # its own failures are translated already
        try:
            return client.resources.get(api_version=api_version, kind=kind)
        except dynamic.exceptions.ResourceNotFoundError as exc:
            raise errors.NotFound(f"the cluster does not serve {kind} ({api_version})") from exc
        except Exception as exc:
            # The first look at a kind fetches its API group's resource list: a read of the API
            # server like any, which can fail like any (a 500, a timeout).
            raise translate(exc, f"discovery of {kind} ({api_version})") from exc

    def get(self, ref: ObjectRef) -> dict[str, Any]:
        path_safe(namespace=ref.namespace, name=ref.name)
        resource = self._resource(ref.api_version, ref.kind)
        try:
            found = resource.get(
                name=ref.name, namespace=ref.namespace or None, _request_timeout=self.timeout
            )
        except Exception as exc:
            raise translate(exc, str(ref)) from exc
        result: dict[str, Any] = _as_dict(found, str(ref))
        return result

    def find_named(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str,
        *,
        timeout: tuple[float, float] | None = None,
    ) -> dict[str, Any] | None:
        """One object of any served kind (a Lease: not a kind the action catalog names), or
        None when it does not exist. ``timeout``: (connect, read) seconds for this call."""
        path_safe(namespace=namespace, name=name)
        resource = self._resource(api_version, kind)
        what = f"{kind.lower()}/{name} in {namespace}"
        try:
            found = resource.get(
                name=name,
                namespace=namespace,
                _request_timeout=timeout or self.timeout,
                serialize=False,
            )
        except Exception as exc:
            error = translate(exc, what)
            if isinstance(error, errors.NotFound):
                return None
            raise error from exc
        return _json_object(found, what)

    def write_named(
        self,
        obj: dict[str, Any],
        *,
        create: bool = False,
        timeout: tuple[float, float] | None = None,
    ) -> dict[str, Any]:
        """Create, or replace, an object of any served kind; a replace carrying a
        resourceVersion is a compare-and-swap (a 409 ``Conflict`` when it moved), as is a
        create of an object that exists."""
        metadata = obj["metadata"]
        path_safe(namespace=metadata.get("namespace"), name=metadata.get("name"))
        what = f"{obj['kind'].lower()}/{metadata['name']} in {metadata.get('namespace')}"
        resource = self._resource(obj["apiVersion"], obj["kind"])
        send = resource.create if create else resource.replace
        try:
            written = send(
                body=obj,
                namespace=metadata.get("namespace") or None,
                _request_timeout=timeout or self.timeout,
                serialize=False,
            )
        except Exception as exc:
            raise translate(exc, what) from exc
        return _json_object(written, what)

    def find(self, ref: ObjectRef) -> dict[str, Any] | None:
        try:
            return self.get(ref)
        except errors.NotFound:
            return None

    def ping(self, timeout: float = 2.0) -> None:
        """Raise ``Unavailable`` unless the API server answers ``/version`` within
        ``timeout`` seconds (readiness: a path every authenticated identity may read)."""
        try:
            client.VersionApi(self.api_client).get_code(_request_timeout=(timeout, timeout))
        except Exception as exc:
            raise translate(exc, f"the API server at {self.host}") from exc

    def list(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        path_safe(namespace=namespace)
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
        path_safe(namespace=ref.namespace, name=ref.name)
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
        path_safe(namespace=namespace)
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
        path_safe(namespace=ref.namespace, name=ref.name)
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
        path_safe(namespace=namespace, name=pod)
        if not namespace:
            raise errors.Invalid("a pod's logs need its namespace")
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
