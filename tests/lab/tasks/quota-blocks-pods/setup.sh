#!/usr/bin/env bash
# Setup: A ResourceQuota of 1 pod stops web from reaching its 3 replicas.
. "$(dirname "$0")/../lib.sh"
k create quota pods --hard=pods=1
k apply -f - <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}]
YAML
