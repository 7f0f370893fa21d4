NS=t24-readiness-gate
. "$(dirname "$0")/../lib.sh"
set -e
[ "$(k get pod web -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = False ]
k get pod web -o wide | tee /dev/stderr | grep -q '0/1'
k patch pod web --subresource=status --type=strategic -p '{"status":{"conditions":[{"type":"example.com/lb-registered","status":"True"}]}}'
k wait --for=condition=Ready pod/web --timeout=60s
