#!/usr/bin/env bash
# Setup: mysql exits at start: no root password option is set.
. "$(dirname "$0")/../lib.sh"
k apply -f - <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: db}
spec:
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: db
        image: mysql:8.0
        ports: [{containerPort: 3306, name: http}]
YAML
