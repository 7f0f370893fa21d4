#!/usr/bin/env bash
# Setup: The log agent DaemonSet selects nodes labelled role=logging; none are, so it runs nowhere.
. "$(dirname "$0")/../lib.sh"
k apply -f - <<'YAML'
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {role: logging}
      containers:
      - name: agent
        image: busybox:1.36
        ports: [{containerPort: 80, name: http}]
        command: [sh, -c, 'tail -f /dev/null']
YAML
