NS=t26-scaled-zero-cp
. "$(dirname "$0")/../lib.sh"
[ "$(k get deploy worker -o jsonpath='{.status.availableReplicas}')" = 1 ] || fail "not available"
p=$(ready_pod app=worker); [ -n "$p" ] || fail "no ready pod"
for i in $(seq 1 10); do k logs $p | grep -q 'licensed to acme-corp' && break; sleep 1; done
k logs $p | grep -q 'licensed to acme-corp' || fail "not licensed"
out=$(timeout 6 $K -n $NS attach $p -c worker 2>/dev/null)
echo "$out" | grep -q '^tick [0-9]' || fail "attach saw no ticks: $out"
rm -f /tmp/t26.back; k cp $NS/$p:/work/license.key /tmp/t26.back >/dev/null 2>&1 || fail "cp out"
[ "$(cat /tmp/t26.back)" = acme-corp ] || fail "cp content"
echo OK
