NS=t22-ssa-conflict
. "$(dirname "$0")/../lib.sh"
D="$(dirname "$0")"
out=$(k apply --server-side --field-manager=team-b -f $D/b.yaml 2>&1); rc=$?
echo "$out"
[ $rc != 0 ] || { echo "expected a conflict"; exit 1; }
echo "$out" | grep -q 'conflict with "team-a"' || exit 1
echo "$out" | grep -q '\.spec\.template\.spec\.containers\[name="web"\]\.image' || exit 1
k diff --server-side --field-manager=team-b --force-conflicts -f $D/b.yaml; [ $? = 1 ] || { echo "diff should show a change"; exit 1; }
set -e
k apply --server-side --field-manager=team-b --force-conflicts -f $D/b.yaml
rolled_out web
