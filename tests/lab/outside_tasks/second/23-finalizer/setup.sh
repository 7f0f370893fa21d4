NS=t23-finalizer
. "$(dirname "$0")/../lib.sh"
$K create ns $NS
sed 's#  labels:#  finalizers: [example.com/cleanup]\n  labels:#' "$(dirname "$0")/pod.yaml" | k apply -f -
k wait --for=condition=Ready pod/worker --timeout=60s
k delete pod worker --wait=false
