#!/bin/bash
set -e; NS=t05; . "$(dirname "$0")/../lib.sh"
k get events --field-selector reason=Unhealthy | tail -3
k patch deploy web --type=json -p '[{"op":"replace","path":"/spec/template/spec/containers/0/readinessProbe/httpGet/port","value":"http"}]'
k rollout status deploy/web --timeout=60s
