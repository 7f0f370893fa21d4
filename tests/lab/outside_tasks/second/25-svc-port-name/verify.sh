NS=t25-svc-port-name
. "$(dirname "$0")/../lib.sh"
wait_client || fail client
n=$(k get endpoints web -o json | jq '[.subsets[]?.addresses[]?]|length'); [ "$n" = 2 ] || fail "endpoints=$n"
[ "$(k get endpoints web -o jsonpath='{.subsets[0].ports[0].port}')" = 80 ] || fail "endpoint port"
k exec client -- nslookup web.t25-svc-port-name.svc.cluster.local >/dev/null || fail nslookup
k exec client -- sh -c 'wget -qO- -T 5 http://web:8080/ | grep -q "It works!"' || fail "wget svc"
pf_curl svc/web 8080 / | grep -q 'It works!' || fail "port-forward"
echo OK
