NS=t15-wrong-env
. "$(dirname "$0")/../lib.sh"
rolled_out api 45s || fail "rollout"
p=$(ready_pod app=api); [ -n "$p" ] || fail "no ready pod"
[ "$(k exec $p -- sh -c 'echo $APP_MODE')" = production ] || fail "env"
k logs $p | grep -q 'starting mode=production' || fail "log"
k logs $p | grep -qx 'ready' || fail "log ready"
[ "$(k get pod $p -o jsonpath='{.status.containerStatuses[0].restartCount}')" = 0 ] || fail "restarts"
echo OK
