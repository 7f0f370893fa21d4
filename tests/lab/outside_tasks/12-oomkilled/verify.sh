#!/bin/bash
NS=t12; . "$(dirname "$0")/../lib.sh"
k rollout status deploy/worker --timeout=5s || fail "not rolled out"
sleep 3
p=$(k get pod -l app=worker -o jsonpath='{.items[0].metadata.name}')
[ "$(k get pod $p -o jsonpath='{.status.containerStatuses[0].restartCount}')" = 0 ] || fail "still restarting"
k logs $p | grep -qx alloc-ok || fail "worker did not finish allocation"
max=$(k exec $p -- cat /sys/fs/cgroup/memory.max); [ "$max" = 134217728 ] || fail "cgroup memory.max=$max"
echo PASS
