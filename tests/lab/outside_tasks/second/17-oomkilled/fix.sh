NS=t17-oomkilled
. "$(dirname "$0")/../lib.sh"
set -e
p=$(k get pods -l app=db -o jsonpath='{.items[0].metadata.name}')
k wait --for=jsonpath='{.status.containerStatuses[0].lastState.terminated.reason}'=OOMKilled pod/$p --timeout=60s
[ "$(k get pod $p -o jsonpath='{.status.containerStatuses[0].lastState.terminated.exitCode}')" = 137 ]
k set resources deploy/db -c mysql --requests=memory=512Mi --limits=memory=1Gi
rolled_out db
