#!/bin/bash
# someone deleted the app's seed file from the data volume; restore it with kubectl cp / exec -i
set -e; NS=t14; . "$(dirname "$0")/../lib.sh"
$K create ns $NS
cat <<YAML | k apply -f -
apiVersion: v1
kind: Pod
metadata: {name: store, labels: {app: store}}
spec:
  containers:
  - name: store
    image: alpine:3.20
    command: [sleep, "3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
YAML
k wait --for=condition=Ready pod/store --timeout=60s
mkdir -p /tmp/t14 && printf 'id,name\n1,alpha\n2,beta\n' > /tmp/t14/seed.csv
k exec store -- mkdir -p /data/seed
