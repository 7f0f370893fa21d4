#!/bin/bash
# Service selector app=frontend matches no pods (pods are app=web) -> no endpoints
set -e; NS=t03; . "$(dirname "$0")/../lib.sh"
$K create ns $NS
k create deployment web --image=nginx:1.27 --replicas=2 --port=80
k create service clusterip web --tcp=80:80
k patch svc web -p '{"spec":{"selector":{"app":"frontend"}}}'
k run client --image=busybox:1.36 --restart=Never -- sleep 3600
k wait --for=condition=Ready pod/client --timeout=60s
k rollout status deploy/web --timeout=60s
