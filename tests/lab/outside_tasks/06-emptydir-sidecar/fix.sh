#!/bin/bash
set -e; NS=t06; . "$(dirname "$0")/../lib.sh"
k patch deploy site --type=json -p '[{"op":"replace","path":"/spec/template/spec/containers/0/volumeMounts/0/mountPath","value":"/usr/share/nginx/html"}]'
k rollout status deploy/site --timeout=60s
