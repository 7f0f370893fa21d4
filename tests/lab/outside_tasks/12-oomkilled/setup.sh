#!/bin/bash
# batch worker buffers ~50MB but memory limit is 32Mi -> OOMKilled / CrashLoopBackOff
set -e; NS=t12; . "$(dirname "$0")/../lib.sh"
$K create ns $NS
cat <<YAML | k apply -f -
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker}
spec:
  replicas: 1
  selector: {matchLabels: {app: worker}}
  template:
    metadata: {labels: {app: worker}}
    spec:
      containers:
      - name: worker
        image: alpine:3.20
        command: ["sh","-c","head -c 50m /dev/zero | tail > /dev/null; echo alloc-ok; sleep 3600"]
        resources:
          requests: {memory: 16Mi}
          limits: {memory: 32Mi}
YAML
sleep 10
k get pods -l app=worker
