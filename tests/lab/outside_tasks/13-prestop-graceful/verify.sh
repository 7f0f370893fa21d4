#!/bin/bash
NS=t13; . "$(dirname "$0")/../lib.sh"
k rollout status deploy/web --timeout=30s || fail "rollout"
p=$(k get pod -l app=web -o jsonpath='{.items[0].metadata.name}')
k delete pod $p --wait=false
sleep 3
k get pod $p || fail "pod $p gone after 3s (no graceful drain)"
[ -n "$(k get pod $p -o jsonpath='{.metadata.deletionTimestamp}')" ] || fail "no deletionTimestamp"
k get pod $p --no-headers | grep -q Terminating || fail "STATUS is not Terminating"
[ "$(k get pod $p -o jsonpath='{.metadata.deletionGracePeriodSeconds}')" = 30 ] || fail "grace period"
k exec $p -- sh -c 'echo still-serving' | grep -q still-serving || fail "exec during drain"
k wait --for=delete pod/$p --timeout=60s || fail "pod never finished terminating"
k rollout status deploy/web --timeout=30s || fail "replacement"
echo PASS
