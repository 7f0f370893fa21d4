#!/usr/bin/env bash
# Setup: The web Service selects app=wbe: it has no endpoints.
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
YAML
k apply -f - <<'YAML'
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: wbe}
  ports: [{port: 80, targetPort: 80}]
YAML
