#!/bin/bash
NS=t09; . "$(dirname "$0")/../lib.sh"
k rollout status deploy/web --timeout=5s || fail "rollout incomplete"
imgs=$(k get pods -l app=web -o jsonpath='{range .items[*]}{.spec.containers[0].image}{"\n"}{end}' | sort -u)
[ "$imgs" = nginx:1.27-alpine ] || fail "pods run: $imgs"
[ "$(k get deploy web -o jsonpath='{.status.readyReplicas}')" = 2 ] || fail "not 2 ready"
k exec client -- wget -qO- -T 3 http://web | grep -q 'Welcome to nginx' || fail "svc"
k exec deploy/web -- nginx -v 2>&1 | grep -q 'nginx/1.27' || fail "nginx -v does not report 1.27"
echo PASS
