NS=t15-wrong-env
. "$(dirname "$0")/../lib.sh"
set -e
# diagnose: wait for a crash, read the previous run's log
p=$(k get pods -l app=api -o jsonpath='{.items[0].metadata.name}')
k wait --for=jsonpath='{.status.containerStatuses[0].lastState.terminated.exitCode}'=2 pod/$p --timeout=60s
k logs $p --previous | tee /dev/stderr | grep -q 'fatal: unknown mode prod'
k set env deploy/api APP_MODE=production
rolled_out api
