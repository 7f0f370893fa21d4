NS=t19-secret-key
. "$(dirname "$0")/../lib.sh"
set -e
p=$(k get pods -l app=app -o jsonpath='{.items[0].metadata.name}')
k wait --for=jsonpath='{.status.containerStatuses[0].state.waiting.reason}'=CreateContainerConfigError pod/$p --timeout=60s
k create secret generic db-creds --from-literal=password=s3cret --dry-run=client -o yaml | k apply -f -
k rollout restart deploy/app
rolled_out app
