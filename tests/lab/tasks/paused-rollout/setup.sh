#!/usr/bin/env bash
# Setup: A fix to nginx:1.27 was rolled out while the Deployment was paused: nothing changed.
. "$(dirname "$0")/../lib.sh"
k apply -f - <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.26
        ports: [{containerPort: 80, name: http}]
YAML
k rollout status deploy/web --timeout=60s
k rollout pause deploy/web
k set image deploy/web web=nginx:1.27
