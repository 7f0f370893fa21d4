"""``/etc/hosts``, ``/etc/hostname`` and ``/etc/resolv.conf`` as the kubelet writes them into
every container of a pod: the pod's own name and IP, its subdomain, its ``hostAliases``, and
the cluster DNS with the namespace's search path (so ``web`` resolves as ``web.<ns>.svc``).
"""

from __future__ import annotations

from typing import Any

DOMAIN = "cluster.local"
NODE_RESOLV = "nameserver 172.18.0.1\noptions ndots:0\n"  # a kind node's, for dnsPolicy Default


def hostname(pod: dict[str, Any]) -> str:
    spec = pod.get("spec") or {}
    return str(spec.get("hostname") or pod["metadata"]["name"])[:63]


def hosts(pod: dict[str, Any]) -> str:
    """The kubelet's managed hosts file (``kubelet_pods.go``'s ``managedHostsFileContent``)."""
    spec = pod.get("spec") or {}
    name = hostname(pod)
    ip = str((pod.get("status") or {}).get("podIP") or "")
    lines = [
        "# Kubernetes-managed hosts file.",
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        "fe00::0\tip6-localnet",
        "fe00::0\tip6-mcastprefix",
        "fe00::1\tip6-allnodes",
        "fe00::2\tip6-allrouters",
    ]
    subdomain = spec.get("subdomain")
    if ip and subdomain:
        namespace = pod["metadata"].get("namespace", "default")
        lines.append(f"{ip}\t{name}.{subdomain}.{namespace}.svc.{DOMAIN}\t{name}")
    elif ip:
        lines.append(f"{ip}\t{name}")
    text = "\n".join(lines) + "\n"
    aliases = spec.get("hostAliases") or []
    if aliases:
        text += "\n# Entries added by HostAliases.\n"
        for alias in aliases:
            text += f"{alias.get('ip', '')}\t" + "\t".join(alias.get("hostnames") or []) + "\n"
    return text


def resolv_conf(pod: dict[str, Any], dns_ip: str) -> str:
    """The resolver configuration for the pod's ``dnsPolicy`` and ``dnsConfig``."""
    spec = pod.get("spec") or {}
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    if policy == "ClusterFirst" and spec.get("hostNetwork"):
        policy = "Default"  # host-network pods get the node's unless ClusterFirstWithHostNet
    namespace = pod["metadata"].get("namespace", "default")
    nameservers: list[str] = []
    searches: list[str] = []
    options: dict[str, str | None] = {}
    if policy in ("ClusterFirst", "ClusterFirstWithHostNet"):
        nameservers = [dns_ip]
        searches = [f"{namespace}.svc.{DOMAIN}", f"svc.{DOMAIN}", DOMAIN]
        options = {"ndots": "5"}
    elif policy == "Default":
        if not spec.get("dnsConfig"):
            return NODE_RESOLV
        nameservers, options = ["172.18.0.1"], {"ndots": "0"}
    config = spec.get("dnsConfig") or {}
    nameservers += [str(n) for n in config.get("nameservers") or [] if str(n) not in nameservers]
    searches += [str(s) for s in config.get("searches") or [] if str(s) not in searches]
    for option in config.get("options") or []:
        options[str(option.get("name", ""))] = option.get("value")
    lines = []
    if searches:
        lines.append("search " + " ".join(searches))
    lines += [f"nameserver {n}" for n in nameservers]
    if options:
        lines.append(
            "options " + " ".join(k if v is None else f"{k}:{v}" for k, v in options.items() if k)
        )
    return "\n".join(lines) + "\n"
