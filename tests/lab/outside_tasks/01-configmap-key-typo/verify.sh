#!/bin/bash
NS=t01; . "$(dirname "$0")/../lib.sh"
out=$(k exec deploy/web -- cat /etc/config/app.conf) || fail "cannot read app.conf"
echo "$out" | grep -qx 'mode=prod' || fail "mode=prod missing: $out"
k exec deploy/web -- ls /etc/config | grep -qx app.cnf && fail "stale key still present"
echo PASS
