#!/usr/bin/env bash
# Setup: web asks for nodes labelled disktype=sdd; no node has it, pods stay Pending.
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
      nodeSelector: {disktype: sdd}
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}]
YAML
