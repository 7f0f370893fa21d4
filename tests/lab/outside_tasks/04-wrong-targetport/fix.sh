#!/bin/bash
set -e; NS=t04; . "$(dirname "$0")/../lib.sh"
k describe svc web | grep -E 'TargetPort|Endpoints' || true
k patch svc web --type=json -p '[{"op":"replace","path":"/spec/ports/0/targetPort","value":80}]'
k describe svc web | grep -E 'TargetPort|Endpoints' || true
