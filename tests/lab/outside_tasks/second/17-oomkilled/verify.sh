NS=t17-oomkilled
. "$(dirname "$0")/../lib.sh"
rolled_out db 45s || fail rollout
p=$(ready_pod app=db); [ -n "$p" ] || fail "no ready pod"
[ "$(k get pod $p -o jsonpath='{.spec.containers[0].resources.limits.memory}')" = 1Gi ] || fail limit
[ -z "$(k get pod $p -o jsonpath='{.status.containerStatuses[0].lastState.terminated.reason}')" ] || fail "new pod was killed"
[ "$(k exec $p -- sh -c 'echo $MYSQL_ROOT_PASSWORD')" = hunter2 ] || fail exec
echo OK
