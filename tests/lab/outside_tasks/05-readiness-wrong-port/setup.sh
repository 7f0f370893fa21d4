#!/bin/bash
# readinessProbe checks port 8080; nginx listens on 80 -> pods never Ready, svc has no ready endpoints
set -e; NS=t05; . "$(dirname "$0")/../lib.sh"
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
      containers:
      - name: nginx
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}]
        readinessProbe:
          httpGet: {path: /, port: 8080}
          periodSeconds: 2
          failureThreshold: 1
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  containers: [{name: c, image: busybox:1.36, command: [sleep, "3600"]}]
YAML
k wait --for=condition=Ready pod/client --timeout=60s
sleep 8
k get pods -l app=web
