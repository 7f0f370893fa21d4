#!/bin/bash
# app reads its tier from downward-API file /etc/podinfo/labels; pod was created without tier label
set -e; NS=t11; . "$(dirname "$0")/../lib.sh"
$K create ns $NS
cat <<YAML | k apply -f -
apiVersion: v1
kind: Pod
metadata:
  name: app
  labels: {app: shop}
  annotations: {owner: team-a}
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    env:
    - {name: MY_POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: MY_NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: MEM_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    resources: {limits: {memory: 64Mi, cpu: 100m}}
    volumeMounts: [{name: podinfo, mountPath: /etc/podinfo}]
  volumes:
  - name: podinfo
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: annotations, fieldRef: {fieldPath: metadata.annotations}}
YAML
k wait --for=condition=Ready pod/app --timeout=60s
