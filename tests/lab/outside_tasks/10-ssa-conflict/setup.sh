#!/bin/bash
# GitOps owns ConfigMap flags via SSA (manager gitops); someone hot-patched LOG_LEVEL=debug with manager "hotfix".
# Re-applying the desired state as gitops conflicts; pods consume the flags via envFrom.
set -e; NS=t10; . "$(dirname "$0")/../lib.sh"; D=$(dirname "$0")
$K create ns $NS
k apply --server-side --field-manager=gitops -f $D/cm.yaml
k patch cm flags --field-manager=hotfix -p '{"data":{"LOG_LEVEL":"debug"}}'
# hotfix then takes ownership via SSA too (as a controller would)
cat <<YAML | k apply --server-side --field-manager=hotfix --force-conflicts -f -
apiVersion: v1
kind: ConfigMap
metadata: {name: flags}
data: {LOG_LEVEL: debug}
YAML
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
      - name: w
        image: alpine:3.20
        command: [sleep, "3600"]
        envFrom: [{configMapRef: {name: flags}}]
YAML
k rollout status deploy/worker --timeout=60s
