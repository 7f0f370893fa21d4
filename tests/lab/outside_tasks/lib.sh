# common helpers; source from task scripts
export KUBECONFIG=${KUBECONFIG:-/tmp/outside/kubeconfig}
K=${KUBECTL:-kubectl}
k() { $K -n "$NS" "$@"; }
fail() { echo "VERIFY FAIL: $*" >&2; exit 1; }
