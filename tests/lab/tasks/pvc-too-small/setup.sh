#!/usr/bin/env bash
# Setup: The database's 1Gi volume is full; grow it to 5Gi (its class allows expansion).
. "$(dirname "$0")/../lib.sh"
k apply -f - <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: expandable-$NS}
provisioner: rancher.io/local-path
allowVolumeExpansion: true
YAML
k apply -f - <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  storageClassName: expandable-$NS
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
YAML
