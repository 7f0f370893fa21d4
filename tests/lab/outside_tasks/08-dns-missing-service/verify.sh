#!/bin/bash
NS=t08; . "$(dirname "$0")/../lib.sh"
out=$(k exec dns -- nslookup redis.$NS.svc.cluster.local 2>&1); echo "$out"
ip=$(k get svc redis -o jsonpath='{.spec.clusterIP}' 2>/dev/null)
[ -n "$ip" ] && echo "$out" | grep -q "Address: $ip" || fail "redis does not resolve to its ClusterIP"
k exec dns -- nslookup redis >/dev/null 2>&1 || fail "short name does not resolve"
k exec client -- redis-cli -h redis set greeting hi
pong=$(k exec client -- redis-cli -h redis ping); [ "$pong" = PONG ] || fail "redis-cli ping said '$pong'"
[ "$(k exec deploy/redis -- redis-cli get greeting)" = hi ] || fail "value not stored"
echo PASS
