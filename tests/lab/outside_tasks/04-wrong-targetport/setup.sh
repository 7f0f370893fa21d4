#!/bin/bash
# Service targets port 8080 but httpd listens on 80
set -e; NS=t04; . "$(dirname "$0")/../lib.sh"
$K create ns $NS
k create deployment web --image=httpd:2.4 --port=80
k expose deployment web --port=80 --target-port=8080
k rollout status deploy/web --timeout=60s
