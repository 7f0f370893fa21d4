#!/usr/bin/env bash
# Setup: cache (a StatefulSet) was moved to redis:99, which does not exist; its pod is stuck.
. "$(dirname "$0")/../lib.sh"
k apply -f - <<'YAML'
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: cache}
spec:
  serviceName: cache
  replicas: 1
  selector: {matchLabels: {app: cache}}
  template:
    metadata: {labels: {app: cache}}
    spec:
      containers:
      - name: cache
        image: redis:7.2
        ports: [{containerPort: 6379, name: http}]
YAML
k rollout status statefulset/cache --timeout=60s
k set image statefulset/cache cache=redis:99
