#!/usr/bin/env bash
# Setup: web's readiness probe checks port 8080; nginx listens on 80, so no pod is ready.
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
        readinessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 5}
YAML
