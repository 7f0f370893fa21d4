#!/usr/bin/env bash
# Setup: app must run with MODE=blue, but its ConfigMap is immutable and says green.
. "$(dirname "$0")/../lib.sh"
k create configmap app-config --from-literal=MODE=green --dry-run=client -o yaml | sed 's/^data:/immutable: true\ndata:/' | k apply -f -
k apply -f - <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: 1
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers:
      - name: app
        image: busybox:1.36
        ports: [{containerPort: 80, name: http}]
        command: [sh, -c, 'echo mode=$MODE; sleep 3600']
        envFrom: [{configMapRef: {name: app-config}}]
YAML
