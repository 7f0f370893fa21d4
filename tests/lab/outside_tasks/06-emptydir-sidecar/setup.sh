#!/bin/bash
# content sidecar writes into emptyDir, but nginx mounts it at the wrong path (/usr/share/nginx/htm)
set -e; NS=t06; . "$(dirname "$0")/../lib.sh"
$K create ns $NS
cat <<YAML | k apply -f -
apiVersion: apps/v1
kind: Deployment
metadata: {name: site}
spec:
  replicas: 1
  selector: {matchLabels: {app: site}}
  template:
    metadata: {labels: {app: site}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        volumeMounts: [{name: html, mountPath: /usr/share/nginx/htm}]
      - name: content
        image: busybox:1.36
        command: ["sh","-c","echo 'hello from sidecar' > /work/index.html; while true; do date > /work/ts.txt; sleep 5; done"]
        volumeMounts: [{name: html, mountPath: /work}]
      volumes:
      - name: html
        emptyDir: {}
YAML
k rollout status deploy/site --timeout=60s
