#!/bin/bash
NS=t03; . "$(dirname "$0")/../lib.sh"
k exec client -- wget -qO- -T 3 http://web.$NS.svc.cluster.local/ | grep -q 'Welcome to nginx' || fail "service unreachable from client"
k exec client -- wget -qO- -T 3 http://web/ >/dev/null || fail "short name unreachable"
echo PASS
