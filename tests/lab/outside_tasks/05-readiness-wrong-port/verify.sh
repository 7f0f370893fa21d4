#!/bin/bash
NS=t05; . "$(dirname "$0")/../lib.sh"
k wait --for=condition=Ready pod -l app=web --timeout=5s || fail "web pods not ready"
k exec client -- wget -qO- -T 3 http://web/ | grep -q nginx || fail "svc unreachable"
n=$(k get endpoints web -o jsonpath='{.subsets[0].addresses[*].ip}' | wc -w); [ "$n" = 2 ] || fail "ready endpoints=$n"
echo PASS
