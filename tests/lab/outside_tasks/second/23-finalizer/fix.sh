NS=t23-finalizer
. "$(dirname "$0")/../lib.sh"
set -e
[ -n "$(k get pod worker -o jsonpath='{.metadata.deletionTimestamp}')" ]
k get pod worker | grep -q Terminating
k patch pod worker --type=merge -p '{"metadata":{"finalizers":null}}'
k wait --for=delete pod/worker --timeout=60s
k apply -f "$(dirname "$0")/pod.yaml"
k wait --for=condition=Ready pod/worker --timeout=60s
