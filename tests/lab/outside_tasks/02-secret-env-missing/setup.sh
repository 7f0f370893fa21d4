#!/bin/bash
# Deployment reads DB_PASSWORD from Secret db-creds which was never created -> CreateContainerConfigError
set -e; NS=t02; . "$(dirname "$0")/../lib.sh"
$K create ns $NS
cat <<YAML | k apply -f -
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - name: api
        image: busybox:1.36
        command: ["sh","-c","echo started; sleep 3600"]
        env:
        - name: DB_USER
          value: app
        - name: DB_PASSWORD
          valueFrom: {secretKeyRef: {name: db-creds, key: password}}
YAML
sleep 5
k get pods -l app=api
