NS=t24-readiness-gate
. "$(dirname "$0")/../lib.sh"
k wait --for=condition=Ready pod/web --timeout=20s || fail "pod not ready"
wait_client || fail client
ip=$(k get pod web -o jsonpath='{.status.podIP}')
k get endpoints web -o jsonpath='{.subsets[*].addresses[*].ip}' | grep -qw "$ip" || fail "not in endpoints"
k exec client -- sh -c 'wget -qO- -T 5 http://web | grep -q "Welcome to nginx"' || fail wget
echo OK
