NS=t20-sidecar-mount
. "$(dirname "$0")/../lib.sh"
rolled_out app 45s || fail rollout
p=$(ready_pod app=app); [ -n "$p" ] || fail "no ready pod"
sleep 3
# default container (annotation) is writer
k exec $p -- sh -c 'test -f /shared/report.txt && grep -q report-ok /shared/report.txt' || fail "writer file"
k exec $p -c reader -- cat /srv/data/report.txt | grep -q report-ok || fail "reader sees no file"
rm -f /tmp/t20.report; k cp -c reader $NS/$p:/srv/data/report.txt /tmp/t20.report >/dev/null 2>&1 || fail "cp out"
grep -q report-ok /tmp/t20.report || fail "cp content"
echo OK
