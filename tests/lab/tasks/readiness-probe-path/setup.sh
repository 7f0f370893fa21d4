#!/usr/bin/env bash
# Setup: web's readiness probe asks nginx for /healthz, which nginx answers with 404.
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
        readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 5}
YAML
