#!/usr/bin/env bash
# Setup: Every node was cordoned for maintenance and web's pods were evicted: they stay Pending.
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
kubectl cordon $(kubectl get nodes -o name)
k delete pods -l app=web --wait=false
