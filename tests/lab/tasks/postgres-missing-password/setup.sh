#!/usr/bin/env bash
# Setup: postgres refuses to start: POSTGRES_PASSWORD is not set.
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
        image: postgres:16
        ports: [{containerPort: 5432, name: http}]
YAML
