#!/bin/bash
NS=t10; . "$(dirname "$0")/../lib.sh"; D=$(dirname "$0")
out=$(k apply --server-side --field-manager=gitops -f $D/cm.yaml 2>&1); rc=$?
echo "$out"; [ $rc != 0 ] && echo "$out" | grep -q 'conflict' || { echo "expected a conflict"; exit 1; }
set -e
k apply --server-side --field-manager=gitops --force-conflicts -f $D/cm.yaml
k rollout restart deploy/worker
k rollout status deploy/worker --timeout=60s
