#!/usr/bin/env bash
# Setup: mysql is OOMKilled: its memory limit is 128Mi.
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
        env: [{name: MYSQL_ROOT_PASSWORD, value: s3cret}]
        resources: {limits: {memory: 128Mi}, requests: {memory: 128Mi}}
YAML
