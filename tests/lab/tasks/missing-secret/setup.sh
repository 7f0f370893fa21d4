#!/usr/bin/env bash
# Setup: db-client needs the password key of Secret db-credentials, which does not exist.
. "$(dirname "$0")/../lib.sh"
k apply -f - <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: client}
spec:
  replicas: 1
  selector: {matchLabels: {app: client}}
  template:
    metadata: {labels: {app: client}}
    spec:
      containers:
      - name: client
        image: busybox:1.36
        ports: [{containerPort: 80, name: http}]
        command: [sh, -c, 'sleep 3600']
        env:
        - name: DB_PASSWORD
          valueFrom: {secretKeyRef: {name: db-credentials, key: password}}
YAML
