#!/bin/bash
set -e; NS=t02; . "$(dirname "$0")/../lib.sh"
k get pods -l app=api -o jsonpath='{range .items[*]}{.status.containerStatuses[0].state.waiting.reason}{"\n"}{end}'
k describe pod -l app=api | grep -iE 'secret|Warning' | head -5 || true
k create secret generic db-creds --from-literal=password='s3cr3t!'
k rollout status deploy/api --timeout=60s
