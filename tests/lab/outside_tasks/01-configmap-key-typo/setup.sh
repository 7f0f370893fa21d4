#!/bin/bash
# ConfigMap key typo: app expects /etc/config/app.conf but CM has key app.cnf
set -e; NS=t01; . "$(dirname "$0")/../lib.sh"
$K create ns $NS
k create configmap app-config --from-literal=app.cnf='mode=prod
workers=4'
cat <<YAML | k apply -f -
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        volumeMounts: [{name: cfg, mountPath: /etc/config}]
      volumes:
      - name: cfg
        configMap: {name: app-config}
YAML
k rollout status deploy/web --timeout=60s
