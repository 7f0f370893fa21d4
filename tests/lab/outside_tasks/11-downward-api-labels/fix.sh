#!/bin/bash
set -e; NS=t11; . "$(dirname "$0")/../lib.sh"
k label pod app tier=frontend
# kubelet refreshes downward API volumes on its sync loop
for i in $(seq 1 60); do k exec app -- cat /etc/podinfo/labels | grep -q tier && break; sleep 1; done
