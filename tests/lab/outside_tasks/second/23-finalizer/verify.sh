NS=t23-finalizer
. "$(dirname "$0")/../lib.sh"
[ -z "$(k get pod worker -o jsonpath='{.metadata.deletionTimestamp}')" ] || fail "still terminating"
[ -z "$(k get pod worker -o jsonpath='{.metadata.finalizers}')" ] || fail "finalizer present"
k wait --for=condition=Ready pod/worker --timeout=30s || fail ready
[ "$(k exec worker -- hostname)" = worker ] || fail hostname
echo OK
