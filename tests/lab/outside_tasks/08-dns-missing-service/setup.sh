#!/bin/bash
# app expects service "redis" but it was exposed as "redis-master" -> DNS NXDOMAIN for redis
set -e; NS=t08; . "$(dirname "$0")/../lib.sh"
$K create ns $NS
k create deployment redis --image=redis:7.2 --port=6379
k expose deployment redis --name=redis-master --port=6379
k run client --image=redis:7.2 --restart=Never --command -- sleep 3600
k run dns --image=busybox:1.36 --restart=Never -- sleep 3600
k wait --for=condition=Ready pod/client pod/dns --timeout=60s
k rollout status deploy/redis --timeout=60s
