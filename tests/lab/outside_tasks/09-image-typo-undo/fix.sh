#!/bin/bash
set -e; NS=t09; . "$(dirname "$0")/../lib.sh"
k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.name} {.status.containerStatuses[0].state.waiting.reason} {.status.containerStatuses[0].state.waiting.message}{"\n"}{end}'
k rollout history deploy/web
k rollout undo deploy/web
k rollout status deploy/web --timeout=60s
