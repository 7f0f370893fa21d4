NS=t21-job-exit
. "$(dirname "$0")/../lib.sh"
set -e
k wait --for=condition=Failed job/migrate --timeout=60s
p=$(k get pods -l job-name=migrate -o jsonpath='{.items[0].metadata.name}')
[ "$(k get pod $p -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')" = 3 ]
k logs $p | grep -q 'TARGET not set'
k delete job migrate
sed 's#        command:#        env: [{name: TARGET, value: v2}]\n        command:#' "$(dirname "$0")/job.yaml" | k apply -f -
k wait --for=condition=Complete job/migrate --timeout=60s
