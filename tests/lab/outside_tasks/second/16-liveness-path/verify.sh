NS=t16-liveness-path
. "$(dirname "$0")/../lib.sh"
rolled_out web 45s || fail rollout
sleep 8   # > periodSeconds*failureThreshold: a bad probe would have restarted it
for p in $(k get pods -l app=web -o json | jq -r '.items[]|select(.metadata.deletionTimestamp==null)|.metadata.name'); do
  [ "$(k get pod $p -o jsonpath='{.status.containerStatuses[0].restartCount}')" = 0 ] || fail "$p restarted"
done
pf_curl svc/web 80 / | grep -q 'Welcome to nginx' || fail "port-forward curl"
echo OK
