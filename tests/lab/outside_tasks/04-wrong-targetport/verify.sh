#!/bin/bash
NS=t04; . "$(dirname "$0")/../lib.sh"
port=$((20000 + RANDOM % 20000))
k port-forward svc/web $port:80 >/tmp/t04-pf.log 2>&1 & pf=$!
trap 'kill $pf 2>/dev/null' EXIT
for i in $(seq 1 20); do grep -q Forwarding /tmp/t04-pf.log && break; sleep 0.3; done
body=$(curl -s -m 5 http://127.0.0.1:$port/) ; rc=$?
cat /tmp/t04-pf.log
[ $rc = 0 ] && echo "$body" | grep -q 'It works' || fail "curl via port-forward failed rc=$rc body=$body"
k exec deploy/web -- sh -c 'cat /usr/local/apache2/htdocs/index.html' | grep -q 'It works' || fail "exec check"
echo PASS
