NS=t18-configmap-file
. "$(dirname "$0")/../lib.sh"
set -e
k create configmap site --from-literal=index.html='<h1>shop is open</h1>' --dry-run=client -o yaml | k apply -f -
k rollout restart deploy/web
rolled_out web
