#!/bin/bash
NS=t02; . "$(dirname "$0")/../lib.sh"
k rollout status deploy/api --timeout=10s || fail "not rolled out"
for p in $(k get pods -l app=api -o name); do
  k exec $p -- env | grep -qx 'DB_PASSWORD=s3cr3t!' || fail "$p lacks DB_PASSWORD"
  k exec $p -- sh -c 'test "$DB_USER" = app' || fail "$p lacks DB_USER"
done
k logs deploy/api | grep -q started || fail "no log line"
echo PASS
