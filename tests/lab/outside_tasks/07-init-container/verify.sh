#!/bin/bash
NS=t07; . "$(dirname "$0")/../lib.sh"
k rollout status deploy/motd --timeout=5s || fail "not rolled out"
k exec deploy/motd -c main -- cat /data/motd | grep -qx 'welcome to prod' || fail "motd missing"
k logs deploy/motd -c main | grep -qx 'welcome to prod' || fail "main did not print motd"
echo PASS
