"""Prometheus metrics for what the lab simulates, under the names a real cluster exposes.

Three scrape targets on the lab's own HTTP server (same token and TLS as the API), each
a real path where one exists, so a scrape configuration for a cluster works here:

- kube-state-metrics (``kube_state``), through the API server's service proxy:
  ``/api/v1/namespaces/kube-system/services/kube-state-metrics:http-metrics/proxy/metrics``
- cAdvisor (``cadvisor``), one per node through the API server's node proxy, as
  Prometheus' kubernetes-mixin configuration scrapes it:
  ``/api/v1/nodes/{node}/proxy/metrics/cadvisor``
- the sample apps' request metrics (``apps``), every running pod's series in one
  document (what per-pod scrapes with Kubernetes relabeling would collect):
  ``/lab/v1/metrics/apps``

Values are read from the simulation at scrape time: the objects in the store, the
kubelet's container runs (``lab.controllers.usage``) and the traffic model's per-pod
counters (``lab.controllers.request_metrics``). See docs/lab.md, "Metrics and Prometheus".
"""
