NS=t22-ssa-conflict
. "$(dirname "$0")/../lib.sh"
k diff --server-side --field-manager=team-b --force-conflicts -f "$(dirname "$0")/b.yaml" >/dev/null || fail "diff not empty"
rolled_out web 45s || fail rollout
mf=$(k get deploy web --show-managed-fields -o json)
echo "$mf" | jq -e '.metadata.managedFields[]|select(.manager=="team-b" and .operation=="Apply")|.fieldsV1."f:spec"."f:template"."f:spec"."f:containers"."k:{\"name\":\"web\"}"|has("f:image")' >/dev/null || fail "team-b does not own image"
echo "$mf" | jq -e '.metadata.managedFields[]|select(.manager=="team-a")|.fieldsV1."f:spec"."f:template"."f:spec"."f:containers"."k:{\"name\":\"web\"}"|has("f:image")|not' >/dev/null || fail "team-a still owns image"
echo "$mf" | jq -e '.metadata.managedFields[]|select(.manager=="team-a")|.fieldsV1."f:spec"|has("f:replicas")' >/dev/null || fail "team-a lost replicas"
p=$(ready_pod app=web); [ -n "$p" ] || fail "no ready pod"
k exec $p -- sh -c 'nginx -v 2>&1' | grep -q 'nginx/1.27' || fail "nginx -v"
echo OK
