NS=t16-liveness-path
. "$(dirname "$0")/../lib.sh"
set -e
k get events --field-selector reason=Unhealthy | grep -q 'statuscode: 404'
k patch deploy web --type=json -p '[{"op":"replace","path":"/spec/template/spec/containers/0/livenessProbe/httpGet/path","value":"/"}]'
rolled_out web
