NS=t26-scaled-zero-cp
. "$(dirname "$0")/../lib.sh"
set -e
[ "$(k get deploy worker -o jsonpath='{.spec.replicas}')" = 0 ]
k scale deploy/worker --replicas=1
rolled_out worker
p=$(ready_pod app=worker)
for i in $(seq 1 10); do k logs $p | grep -q "waiting for license" && break; sleep 1; done
echo acme-corp > /tmp/t26-license.key
k cp /tmp/t26-license.key $NS/$p:/work/license.key
