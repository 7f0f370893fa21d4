#!/bin/bash
set -e; NS=t07; . "$(dirname "$0")/../lib.sh"
p=$(k get pod -l app=motd -o jsonpath='{.items[0].metadata.name}')
k get pod $p -o jsonpath='{.status.initContainerStatuses[0].lastState.terminated.exitCode} {.status.initContainerStatuses[0].state}{"\n"}'
k logs $p -c render || true
k patch deploy motd --type=json -p '[{"op":"replace","path":"/spec/template/spec/initContainers/0/command/2","value":"echo '"'"'welcome to prod'"'"' > /data/motd"}]'
k rollout status deploy/motd --timeout=60s
