NS=t25-svc-port-name
. "$(dirname "$0")/../lib.sh"
set -e
[ -z "$(k get endpoints web -o jsonpath='{.subsets[*].addresses[*].ip}')" ]
k patch svc web --type=json -p '[{"op":"replace","path":"/spec/ports/0/targetPort","value":"web-http"}]'
for i in $(seq 1 30); do [ -n "$(k get endpoints web -o jsonpath='{.subsets[*].addresses[*].ip}')" ] && break; sleep 1; done
