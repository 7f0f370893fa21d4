NS=t19-secret-key
. "$(dirname "$0")/../lib.sh"
rolled_out app 45s || fail rollout
p=$(ready_pod app=app); [ -n "$p" ] || fail "no ready pod"
k exec $p -- sh -c 'test "$DB_PASSWORD" = s3cret' || fail "env value"
k exec $p -- sh -c 'exit 7'; [ $? = 7 ] || fail "exit code not propagated"
echo OK
