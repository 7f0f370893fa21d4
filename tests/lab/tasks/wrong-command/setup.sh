#!/usr/bin/env bash
# Setup: worker's command has a typo (slep) and crash-loops with exit 127.
. "$(dirname "$0")/../lib.sh"
k apply -f - <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker}
spec:
  replicas: 1
  selector: {matchLabels: {app: worker}}
  template:
    metadata: {labels: {app: worker}}
    spec:
      containers:
      - name: worker
        image: busybox:1.36
        ports: [{containerPort: 80, name: http}]
        command: [sh, -c, 'slep 3600']
YAML
