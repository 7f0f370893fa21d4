# shared helpers; source with NS set
K="${KUBECTL:-kubectl}"
k() { $K -n "$NS" "$@"; }
# name of one Running+Ready pod without deletionTimestamp matching selector
ready_pod() {
  k get pods -l "$1" -o json | jq -r '[.items[] | select(.metadata.deletionTimestamp==null) | select(.status.phase=="Running") | select(any(.status.conditions[]?; .type=="Ready" and .status=="True"))][0].metadata.name // empty'
}
# wait until only new (non-terminating) pods exist and rollout done
rolled_out() { k rollout status "deploy/$1" --timeout="${2:-60s}"; }
client_pod() {
  k run client --image=busybox:1.36 --restart=Never -- sleep 3600 >/dev/null
}
wait_client() { k wait --for=condition=Ready pod/client --timeout=60s >/dev/null; }
fail() { echo "VERIFY FAIL: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
# port-forward $1 (resource) remote port $2, run curl on path $3, print body
pf_curl() {
  local p; p=$(free_port)
  k port-forward "$1" "$p:$2" >/tmp/pf.$$.log 2>&1 & local pid=$!
  local i body=""
  for i in $(seq 1 20); do
    body=$(curl -s -m 3 "http://127.0.0.1:$p${3:-/}") && break
    sleep 0.5
  done
  kill $pid 2>/dev/null; wait $pid 2>/dev/null
  printf '%s' "$body"
}
