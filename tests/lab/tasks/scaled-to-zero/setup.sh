#!/usr/bin/env bash
# Setup: Somebody scaled checkout to zero replicas during an incident and forgot it.
. "$(dirname "$0")/../lib.sh"
k apply -f - <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: checkout}
spec:
  replicas: 2
  selector: {matchLabels: {app: checkout}}
  template:
    metadata: {labels: {app: checkout}}
    spec:
      containers:
      - name: checkout
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}]
YAML
k scale deploy/checkout --replicas=0
