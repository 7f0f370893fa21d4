"""Actions on how traffic reaches pods: Services (patch a port or selector, create one that
exposes a workload's pods) and NetworkPolicies."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.actions.base import Action
from tools.errors import Invalid

_PORT_TEXT = re.compile(
    r"^(?:(?P<name>[a-z0-9]([-a-z0-9]*[a-z0-9])?):)?(?P<port>[0-9]+)"
    r"(?::(?P<target>[0-9]+|[a-z][-a-z0-9]*))?(?:/(?P<protocol>TCP|UDP|SCTP))?$"
)


class PatchService(Action):
    name = "patch-service"
    example = "service/web target-port=8080"
    kinds = ("Service",)
    port_index: int = Field(default=0, ge=0, description="which entry of spec.ports")
    target_port: int | str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    selector: dict[str, str] | None = None

    def intent(self, current: dict[str, Any]) -> str:
        changes = []
        if self.target_port is not None:
            changes.append(f"targetPort {self.target_port}")
        if self.port is not None:
            changes.append(f"port {self.port}")
        if self.selector is not None:
            changes.append("selector " + ",".join(f"{k}={v}" for k, v in self.selector.items()))
        return f"Set {', '.join(changes) or 'nothing'} on service/{self.target} in {self.namespace}"

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        if self.target_port is None and self.port is None and self.selector is None:
            raise Invalid("patch-service needs target_port, port or selector")
        ports = obj["spec"].get("ports") or []
        if (self.target_port is not None or self.port is not None) and self.port_index >= len(
            ports
        ):
            raise Invalid(
                f"service/{self.target} has {len(ports)} port(s); port_index "
                f"{self.port_index} does not exist"
            )
        if self.target_port is not None:
            ports[self.port_index]["targetPort"] = self.target_port
        if self.port is not None:
            ports[self.port_index]["port"] = self.port
        if self.selector is not None:
            obj["spec"]["selector"] = dict(self.selector)


class ServicePort(BaseModel):
    """One entry of a Service's ``spec.ports``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    text_syntax: ClassVar[str] = "NAME:PORT[:TARGET][/PROTOCOL]"

    name: str = Field(default="", pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$", max_length=15)
    port: int = Field(ge=1, le=65535)
    target_port: int | str | None = Field(default=None, description="default: the port")
    protocol: Literal["TCP", "UDP", "SCTP"] = "TCP"

    @classmethod
    def from_text(cls, text: str) -> ServicePort:
        """How ``stratus act`` reads one: NAME:PORT[:TARGET][/PROTOCOL], e.g. main:80:8080."""
        match = _PORT_TEXT.fullmatch(text.strip())
        if match is None:
            raise ValueError(f"expected NAME:PORT[:TARGET][/PROTOCOL], got {text!r}")
        target = match["target"]
        return cls(
            name=match["name"] or "",
            port=int(match["port"]),
            target_port=(int(target) if target.isdigit() else target) if target else None,
            protocol=match["protocol"] or "TCP",  # type: ignore[arg-type]  # checked by the regex
        )

    def manifest(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.name} if self.name else {}
        entry.update(
            port=self.port,
            targetPort=self.target_port if self.target_port is not None else self.port,
            protocol=self.protocol,
        )
        return entry


class CreateService(Action):
    """Expose a workload's pods under a name its callers use (undo deletes the Service)."""

    name = "create-service"
    example = "service/search selector=app=search ports=main:8082:8082"
    kinds = ("Service",)
    risk = "low"
    operation = "create"
    selector: dict[str, str] = Field(min_length=1, description="the pod labels to send traffic to")
    ports: list[ServicePort] = Field(min_length=1, max_length=16)
    labels: dict[str, str] | None = Field(default=None, description="default: the selector")

    def intent(self, current: dict[str, Any]) -> str:
        ports = ", ".join(
            f"{p.port}→{p.target_port if p.target_port is not None else p.port}" for p in self.ports
        )
        selector = ",".join(f"{k}={v}" for k, v in self.selector.items())
        return (
            f"Create service/{self.target} in {self.namespace} for the pods labelled {selector} "
            f"(ports {ports})"
        )

    def manifest(self) -> dict[str, Any]:
        names = [p.name for p in self.ports]
        if len(self.ports) > 1 and (not all(names) or len(set(names)) != len(names)):
            raise Invalid("a Service with several ports needs a distinct name for each port")
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": self.target,
                "namespace": self.namespace,
                "labels": dict(self.labels if self.labels is not None else self.selector),
            },
            "spec": {
                "selector": dict(self.selector),
                "ports": [p.manifest() for p in self.ports],
            },
        }


class DeleteNetworkPolicy(Action):
    name = "delete-networkpolicy"
    example = "networkpolicy/deny-all"
    kinds = ("NetworkPolicy",)
    risk = "high"
    operation = "delete"

    def intent(self, current: dict[str, Any]) -> str:
        return f"Delete networkpolicy/{self.target} in {self.namespace} (re-created on undo)"
