#!/bin/bash
# init container (typo 'ech') should write /data/motd that main container prints; pod stuck Init:CrashLoopBackOff / Init:Error
set -e; NS=t07; . "$(dirname "$0")/../lib.sh"
$K create ns $NS
cat <<YAML | k apply -f -
apiVersion: apps/v1
kind: Deployment
metadata: {name: motd}
spec:
  replicas: 1
  selector: {matchLabels: {app: motd}}
  template:
    metadata: {labels: {app: motd}}
    spec:
      initContainers:
      - name: render
        image: alpine:3.20
        command: ["sh","-c","ech 'welcome to prod' > /data/motd"]
        volumeMounts: [{name: data, mountPath: /data}]
      containers:
      - name: main
        image: busybox:1.36
        command: ["sh","-c","cat /data/motd; sleep 3600"]
        volumeMounts: [{name: data, mountPath: /data}]
      volumes: [{name: data, emptyDir: {}}]
YAML
sleep 6
k get pods -l app=motd
