#!/usr/bin/env bash
# Setup: web's liveness probe checks port 8080, so the kubelet keeps killing nginx.
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
        livenessProbe: {tcpSocket: {port: 8080}, periodSeconds: 5, failureThreshold: 2}
YAML
