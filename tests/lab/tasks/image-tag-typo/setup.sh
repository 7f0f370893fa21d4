#!/usr/bin/env bash
# Setup: web rolls out nginx:1.277, a tag that does not exist; the rollout is stuck.
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
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}]
YAML
k rollout status deploy/web --timeout=60s
k set image deploy/web web=nginx:1.277
