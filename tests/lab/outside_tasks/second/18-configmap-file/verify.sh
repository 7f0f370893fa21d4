NS=t18-configmap-file
. "$(dirname "$0")/../lib.sh"
rolled_out web 45s || fail rollout
wait_client || fail client
p=$(ready_pod app=web); [ -n "$p" ] || fail "no ready pod"
k exec $p -- cat /usr/share/nginx/html/index.html | grep -q 'shop is open' || fail "file content"
k exec client -- sh -c 'wget -qO- -T 5 http://web.t18-configmap-file.svc.cluster.local/ | grep -q "shop is open"' || fail "wget via service"
pf_curl svc/web 80 / | grep -q 'shop is open' || fail "port-forward"
echo OK
