#!/bin/bash
set -e; NS=t12; . "$(dirname "$0")/../lib.sh"
k get pods -l app=worker -o jsonpath='{range .items[*]}{.metadata.name} restarts={.status.containerStatuses[0].restartCount} last={.status.containerStatuses[0].lastState.terminated.reason} exit={.status.containerStatuses[0].lastState.terminated.exitCode}{"\n"}{end}'
k set resources deploy/worker -c worker --limits=memory=128Mi --requests=memory=64Mi
k rollout status deploy/worker --timeout=60s
