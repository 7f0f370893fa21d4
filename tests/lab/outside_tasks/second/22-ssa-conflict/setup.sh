NS=t22-ssa-conflict
. "$(dirname "$0")/../lib.sh"
$K create ns $NS
k apply --server-side --field-manager=team-a -f "$(dirname "$0")/a.yaml"
