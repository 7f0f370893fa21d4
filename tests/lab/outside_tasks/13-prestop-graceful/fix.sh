#!/bin/bash
set -e; NS=t13; . "$(dirname "$0")/../lib.sh"
k patch deploy web --type=strategic -p '{"spec":{"template":{"spec":{"terminationGracePeriodSeconds":30,"containers":[{"name":"nginx","lifecycle":{"preStop":{"exec":{"command":["sh","-c","sleep 10"]}}}}]}}}}'
k rollout status deploy/web --timeout=60s
