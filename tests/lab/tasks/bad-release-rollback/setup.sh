#!/usr/bin/env bash
# Setup: A release of api to a missing tag is stuck half way; roll back to the last good one.
. "$(dirname "$0")/../lib.sh"
k apply -f - <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 3
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - name: api
        image: nginx:1.26
        ports: [{containerPort: 80, name: http}]
YAML
k rollout status deploy/api --timeout=60s
k set image deploy/api api=nginx:1.999
