NS=t21-job-exit
. "$(dirname "$0")/../lib.sh"
k wait --for=condition=Complete job/migrate --timeout=30s || fail "not complete"
[ "$(k get job migrate -o jsonpath='{.status.succeeded}')" = 1 ] || fail succeeded
k logs job/migrate | grep -qx 'migrated to v2' || fail logs
echo OK
