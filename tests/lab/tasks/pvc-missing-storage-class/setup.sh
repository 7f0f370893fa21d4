#!/usr/bin/env bash
# Setup: data's claim asks for StorageClass fast-ssd, which does not exist; the pod is Pending.
. "$(dirname "$0")/../lib.sh"
k apply -f - <<'YAML'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  storageClassName: fast-ssd
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
YAML
k apply -f - <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: store}
spec:
  replicas: 1
  selector: {matchLabels: {app: store}}
  template:
    metadata: {labels: {app: store}}
    spec:
      volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
      containers:
      - name: store
        image: redis:7.2
        ports: [{containerPort: 6379, name: http}]
        volumeMounts: [{name: data, mountPath: /data}]
YAML
