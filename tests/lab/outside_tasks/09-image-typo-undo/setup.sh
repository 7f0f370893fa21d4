#!/bin/bash
# a bad deploy: image tag typo nginx:1.27-alpne -> ImagePullBackOff; fix with rollout undo
set -e; NS=t09; . "$(dirname "$0")/../lib.sh"
$K create ns $NS
k create deployment web --image=nginx:1.27-alpine --replicas=2
k rollout status deploy/web --timeout=60s
k expose deploy web --port=80
k set image deploy/web nginx=nginx:1.27-alpne
k annotate deploy/web kubernetes.io/change-cause="bump nginx" --overwrite
k run client --image=busybox:1.36 --restart=Never -- sleep 3600
k wait --for=condition=Ready pod/client --timeout=60s
sleep 5; k get pods -l app=web
