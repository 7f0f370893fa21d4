#!/bin/bash
NS=t06; . "$(dirname "$0")/../lib.sh"
pod=$(k get pod -l app=site --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}')
k exec $pod -c web -- cat /usr/share/nginx/html/index.html | grep -q 'hello from sidecar' || fail "file not visible in web container"
k exec $pod -c content -- sh -c 'echo extra > /work/extra.txt'
k exec $pod -c web -- cat /usr/share/nginx/html/extra.txt | grep -qx extra || fail "write not shared"
port=$((20000 + RANDOM % 20000))
k port-forward pod/$pod $port:80 >/tmp/t06-pf.log 2>&1 & pf=$!; trap 'kill $pf 2>/dev/null' EXIT
for i in $(seq 1 20); do grep -q Forwarding /tmp/t06-pf.log && break; sleep 0.3; done
curl -s -m 5 http://127.0.0.1:$port/ | grep -q 'hello from sidecar' || fail "nginx does not serve sidecar content"
echo PASS
