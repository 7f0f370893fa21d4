#!/bin/bash
# pods vanish instantly on delete (grace 1s, no preStop) -> in-flight requests dropped; needs preStop drain
set -e; NS=t13; . "$(dirname "$0")/../lib.sh"
$K create ns $NS
cat <<YAML | k apply -f -
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: nginx
        image: nginx:1.27
YAML
k rollout status deploy/web --timeout=60s
