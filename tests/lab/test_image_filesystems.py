"""The public images' own files inside ``kubectl exec`` (nginx's html root and config, httpd's
htdocs, redis's ``/data``, postgres's PGDATA), the kubelet's ``/etc/hosts``, ``hostname`` and
``resolv.conf``, a volume mounted over an image path hiding what the image had there, and
nginx and httpd serving their document root from those files: through a Service to ``wget``
and ``curl`` in another pod, and through a real ``kubectl port-forward`` to a real HTTP client.
"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from lab.controllers import pod_etc
from lab.controllers.image_filesystems import HTTPD_INDEX, NGINX_INDEX
from tests.conftest import Kubectl, Lab, kubectl_for

PODS = """
apiVersion: v1
kind: ConfigMap
metadata: {name: site, namespace: hotel}
data: {index.html: "<h1>from the configmap</h1>\\n"}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: hotel, labels: {app: web}}
spec:
  containers:
  - {name: nginx, image: "nginx:1.27-alpine"}
---
apiVersion: v1
kind: Pod
metadata: {name: mounted, namespace: hotel, labels: {app: mounted}}
spec:
  containers:
  - name: nginx
    image: nginx:1.25
    volumeMounts: [{name: html, mountPath: /usr/share/nginx/html}]
  volumes: [{name: html, configMap: {name: site}}]
---
apiVersion: v1
kind: Pod
metadata: {name: shared, namespace: hotel}
spec:
  containers:
  - name: web
    image: nginx
    volumeMounts: [{name: html, mountPath: /usr/share/nginx/html}]
  - name: content
    image: busybox:1.36
    command: [sleep, "3600"]
    volumeMounts: [{name: html, mountPath: /work}]
  volumes: [{name: html, emptyDir: {}}]
---
apiVersion: v1
kind: Pod
metadata: {name: apache, namespace: hotel}
spec:
  containers: [{name: httpd, image: "httpd:2.4"}]
---
apiVersion: v1
kind: Pod
metadata: {name: cache, namespace: hotel}
spec:
  containers: [{name: redis, image: "redis:7.2"}]
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: hotel}
spec:
  containers:
  - {name: postgres, image: "postgres:16", env: [{name: POSTGRES_PASSWORD, value: pw}]}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: hotel}
spec:
  containers:
  - {name: curl, image: curlimages/curl, command: [sleep, "3600"]}
"""

MOVED_ROOT = """
apiVersion: v1
kind: ConfigMap
metadata: {name: moved-conf, namespace: hotel}
data:
  default.conf: |
    server {
        listen 80;
        # root /usr/share/nginx/html;  (a comment is not configuration)
        location / {
            root /srv/site;
            index index.html;
        }
    }
---
apiVersion: v1
kind: ConfigMap
metadata: {name: moved-site, namespace: hotel}
data: {index.html: "moved\\n"}
---
apiVersion: v1
kind: Pod
metadata: {name: moved, namespace: hotel}
spec:
  containers:
  - name: nginx
    image: nginx
    volumeMounts:
    - {name: conf, mountPath: /etc/nginx/conf.d}
    - {name: site, mountPath: /srv/site}
  volumes:
  - {name: conf, configMap: {name: moved-conf}}
  - {name: site, configMap: {name: moved-site}}
"""

SERVICES = ("web", "mounted")


@pytest.fixture
def kubectl(lab: Lab, tmp_path: Path) -> Kubectl:
    found = kubectl_for("system", lab, tmp_path)
    found.run("apply", "-f", "-", stdin=PODS)
    for name in SERVICES:
        found.run("expose", "pod", name, "--port=80")
    lab.settle()
    return found


def _exec(kubectl: Kubectl, pod: str, *argv: str, container: str = "") -> Any:
    where = ["-c", container] if container else []
    return kubectl.run("exec", pod, *where, "--", *argv, check=False)


def test_the_images_ship_their_well_known_files(kubectl: Kubectl) -> None:
    index = _exec(kubectl, "web", "cat", "/usr/share/nginx/html/index.html")
    assert (index.returncode, index.stdout) == (0, NGINX_INDEX)
    assert len(NGINX_INDEX) == 615  # the stock page's size, as nginx's Content-Length says
    conf = _exec(kubectl, "web", "cat", "/etc/nginx/conf.d/default.conf").stdout
    assert "    listen       80;\n" in conf
    assert "        root   /usr/share/nginx/html;\n" in conf
    assert _exec(kubectl, "web", "ls", "/usr/share/nginx/html").stdout == "50x.html\nindex.html\n"
    htdocs = _exec(kubectl, "apache", "cat", "/usr/local/apache2/htdocs/index.html")
    assert htdocs.stdout == HTTPD_INDEX == "<html><body><h1>It works!</h1></body></html>\n"
    assert _exec(kubectl, "cache", "pwd").stdout == "/data\n"  # the redis image's WORKDIR
    assert _exec(kubectl, "apache", "pwd").stdout == "/usr/local/apache2\n"
    pgdata = _exec(kubectl, "db", "ls", "/var/lib/postgresql/data").stdout.split()
    assert {"PG_VERSION", "base", "pg_hba.conf", "postgresql.conf"} <= set(pgdata)
    assert _exec(kubectl, "db", "cat", "/var/lib/postgresql/data/PG_VERSION").stdout == "16\n"
    missing = _exec(kubectl, "client", "cat", "/usr/share/nginx/html/index.html")
    assert missing.returncode == 1  # curlimages/curl is not nginx


def test_the_kubelet_writes_hosts_hostname_and_the_namespaces_resolver(kubectl: Kubectl) -> None:
    ip = kubectl.out("get", "pod", "web", "-o", "jsonpath={.status.podIP}")
    resolv = _exec(kubectl, "web", "cat", "/etc/resolv.conf").stdout
    assert resolv == (
        "search hotel.svc.cluster.local svc.cluster.local cluster.local\n"
        "nameserver 10.96.0.10\noptions ndots:5\n"
    )
    dns = kubectl.out(
        "get", "svc", "kube-dns", "-o", "jsonpath={.spec.clusterIP}", namespace="kube-system"
    )
    assert f"nameserver {dns}\n" in resolv
    hosts = _exec(kubectl, "web", "cat", "/etc/hosts").stdout
    assert hosts.startswith("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n")
    assert "fe00::2\tip6-allrouters\n" in hosts
    assert hosts.endswith(f"\n{ip}\tweb\n")
    assert _exec(kubectl, "web", "cat", "/etc/hostname").stdout == "web\n"


def test_a_volume_mounted_over_an_image_path_replaces_its_content(kubectl: Kubectl) -> None:
    listing = _exec(kubectl, "mounted", "ls", "/usr/share/nginx/html")
    assert listing.stdout == "index.html\n"  # the image's 50x.html is hidden under the mount
    page = _exec(kubectl, "mounted", "cat", "/usr/share/nginx/html/index.html")
    assert page.stdout == "<h1>from the configmap</h1>\n"
    conf = _exec(kubectl, "mounted", "cat", "/etc/nginx/nginx.conf")
    assert conf.returncode == 0  # beside the mount, the image's files stay


def test_nginx_serves_its_html_root_through_a_service(kubectl: Kubectl) -> None:
    stock = _exec(kubectl, "client", "curl", "-s", "http://web/")
    assert stock.stdout == NGINX_INDEX
    mounted = _exec(kubectl, "client", "curl", "-s", "http://mounted/")
    assert mounted.stdout == "<h1>from the configmap</h1>\n"
    missing = _exec(kubectl, "client", "curl", "-si", "http://mounted/nope.html")
    # (kubectl's output reaches the test as text: CR LF reads as LF; Content-Length counts it)
    head, _, body = missing.stdout.partition("\n\n")
    assert head.startswith("HTTP/1.1 404 Not Found\nServer: nginx/1.25.5\nDate: ")
    assert "\nContent-Type: text/html\nContent-Length: 153\n" in head
    assert body == (
        "<html>\n<head><title>404 Not Found</title></head>\n<body>\n"
        "<center><h1>404 Not Found</h1></center>\n<hr><center>nginx/1.25.5</center>\n"
        "</body>\n</html>\n"
    )
    ok = _exec(kubectl, "client", "curl", "-sI", "http://web/index.html").stdout
    assert "Server: nginx/1.27.3\n" in ok and "Content-Length: 615\n" in ok


def test_nginx_serves_the_root_its_mounted_configuration_names(kubectl: Kubectl, lab: Lab) -> None:
    kubectl.run("apply", "-f", "-", stdin=MOVED_ROOT)
    lab.settle()
    ip = kubectl.out("get", "pod", "moved", "-o", "jsonpath={.status.podIP}")
    assert _exec(kubectl, "client", "curl", "-s", f"http://{ip}/").stdout == "moved\n"
    gone = _exec(
        kubectl,
        "client",
        "curl",
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        f"http://{ip}/50x.html",
    )
    assert gone.stdout == "404"  # the stock html root is no longer what nginx serves


PROBED = """
apiVersion: v1
kind: ConfigMap
metadata: {name: health, namespace: hotel}
data: {healthz: "ok\\n", index.html: "<h1>up</h1>\\n"}
---
apiVersion: v1
kind: Pod
metadata: {name: probed, namespace: hotel}
spec:
  containers:
  - name: nginx
    image: nginx
    readinessProbe: {httpGet: {path: /healthz, port: 80}, periodSeconds: 5}
    volumeMounts: [{name: html, mountPath: /usr/share/nginx/html}]
  volumes: [{name: html, configMap: {name: health}}]
---
apiVersion: v1
kind: Pod
metadata: {name: empty-root, namespace: hotel}
spec:
  containers:
  - name: nginx
    image: nginx
    readinessProbe: {httpGet: {path: /, port: 80}, periodSeconds: 5}
    volumeMounts: [{name: html, mountPath: /usr/share/nginx/html}]
  volumes: [{name: html, emptyDir: {}}]
"""


def test_http_probes_of_nginx_see_the_files_it_serves(kubectl: Kubectl, lab: Lab) -> None:
    kubectl.run("apply", "-f", "-", stdin=PROBED)
    lab.settle()
    ready = "jsonpath={.status.containerStatuses[0].ready}"
    assert kubectl.out("get", "pod", "probed", "-o", ready) == "true"  # /healthz is a file
    assert kubectl.out("get", "pod", "empty-root", "-o", ready) == "false"
    events = kubectl.out(
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=empty-root",
        "-o",
        "jsonpath={.items[*].message}",
    )
    # An empty html root has no index: nginx forbids the folder, as on a node.
    assert "Readiness probe failed: HTTP probe failed with statuscode: 403" in events


def test_httpd_serves_htdocs_and_answers_a_missing_page_as_apache(kubectl: Kubectl) -> None:
    ip = kubectl.out("get", "pod", "apache", "-o", "jsonpath={.status.podIP}")
    page = _exec(kubectl, "client", "curl", "-s", f"http://{ip}/")
    assert page.stdout == HTTPD_INDEX
    missing = _exec(kubectl, "client", "curl", "-si", f"http://{ip}/nope")
    head, _, body = missing.stdout.partition("\n\n")
    assert head.startswith("HTTP/1.1 404 Not Found\nDate: ")
    assert "\nServer: Apache/2.4.62 (Unix)\nContent-Length: 196\n" in head
    assert "<h1>Not Found</h1>\n<p>The requested URL was not found on this server.</p>" in body


def test_nginx_serves_what_a_sidecar_writes_into_a_shared_emptydir_through_port_forward(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    wrote = _exec(
        kubectl,
        "shared",
        "sh",
        "-c",
        "echo hello from sidecar > /work/index.html",
        container="content",
    )
    assert wrote.returncode == 0, wrote.stderr
    _exec(kubectl, "shared", "mkdir", "/work/docs", container="content")
    port = _free_port()
    log = (tmp_path / "forward.log").open("w")
    forward = subprocess.Popen(
        [kubectl.binary, "-n", "hotel", "port-forward", "pod/shared", f"{port}:80"],
        env=kubectl.env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert _get(f"http://127.0.0.1:{port}/") == (200, "hello from sidecar\n")
        _exec(kubectl, "shared", "sh", "-c", "echo later > /work/later.txt", container="content")
        assert _get(f"http://127.0.0.1:{port}/later.txt") == (200, "later\n")
        status, body = _get(f"http://127.0.0.1:{port}/docs/")  # a folder without an index
        assert status == 403 and "<center><h1>403 Forbidden</h1></center>" in body
        status, body = _get(f"http://127.0.0.1:{port}/gone.html")
        assert status == 404 and "</h1></center>\r\n<hr><center>nginx/1.27.3</center>\r\n" in body
    finally:
        forward.terminate()
        forward.wait(timeout=10)
        log.close()


def test_resolv_conf_follows_dns_policy_and_dns_config() -> None:
    pod: dict[str, Any] = {"metadata": {"name": "p", "namespace": "shop"}, "spec": {}}
    assert pod_etc.resolv_conf(pod, "10.96.0.10") == (
        "search shop.svc.cluster.local svc.cluster.local cluster.local\n"
        "nameserver 10.96.0.10\noptions ndots:5\n"
    )
    pod["spec"] = {
        "dnsPolicy": "None",
        "dnsConfig": {
            "nameservers": ["1.1.1.1"],
            "searches": ["corp.example"],
            "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}],
        },
    }
    assert pod_etc.resolv_conf(pod, "10.96.0.10") == (
        "search corp.example\nnameserver 1.1.1.1\noptions ndots:2 edns0\n"
    )
    pod["spec"] = {"hostNetwork": True}
    assert "10.96.0.10" not in pod_etc.resolv_conf(pod, "10.96.0.10")


def test_hosts_names_the_subdomain_and_the_host_aliases() -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": "db-0", "namespace": "shop"},
        "spec": {
            "subdomain": "db",
            "hostAliases": [{"ip": "10.1.2.3", "hostnames": ["foo.local", "bar.local"]}],
        },
        "status": {"podIP": "10.244.1.7"},
    }
    assert pod_etc.hosts(pod).endswith(
        "fe00::2\tip6-allrouters\n10.244.1.7\tdb-0.db.shop.svc.cluster.local\tdb-0\n"
        "\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET6) as probe:  # kubectl listens on both families
        probe.bind(("::1", 0))
        port = int(probe.getsockname()[1])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))
    return port


def _get(url: str) -> tuple[int, str]:
    for _ in range(50):  # kubectl listens a moment after it starts
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                return int(answer.status), str(answer.read().decode())
        except urllib.error.HTTPError as error:
            return int(error.code), error.read().decode()
        except urllib.error.URLError as error:
            if not isinstance(error.reason, ConnectionRefusedError):
                raise
            time.sleep(0.1)
    raise OSError(f"nothing listens at {url}")
