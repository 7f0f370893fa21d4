#!/usr/bin/env bash
# Setup: api reads its settings from ConfigMap api-config, which was never created.
. "$(dirname "$0")/../lib.sh"
k apply -f - <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - name: api
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}]
        envFrom: [{configMapRef: {name: api-config}}]
YAML
