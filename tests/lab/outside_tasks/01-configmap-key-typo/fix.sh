#!/bin/bash
set -e; NS=t01; . "$(dirname "$0")/../lib.sh"
k create configmap app-config --from-literal=app.conf='mode=prod
workers=4' --dry-run=client -o yaml | k replace -f -
k rollout restart deploy/web
k rollout status deploy/web --timeout=60s
