#!/usr/bin/env bash
# Setup: web requests 64 CPUs; no node has them, the pod stays Pending.
. "$(dirname "$0")/../lib.sh"
k apply -f - <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}]
        resources: {requests: {cpu: '64'}}
YAML
