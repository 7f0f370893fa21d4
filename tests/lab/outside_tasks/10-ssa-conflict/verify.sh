#!/bin/bash
NS=t10; . "$(dirname "$0")/../lib.sh"
k exec deploy/worker -- env | grep -qx LOG_LEVEL=info || fail "LOG_LEVEL not info in pod"
k exec deploy/worker -- sh -c 'test "$FEATURE_X" = on' || fail "FEATURE_X"
owner=$(k get cm flags --show-managed-fields -o json | python3 -c 'import json,sys
m=json.load(sys.stdin)["metadata"]["managedFields"]
print(",".join(f["manager"] for f in m if f.get("operation")=="Apply" and "f:LOG_LEVEL" in f.get("fieldsV1",{}).get("f:data",{})))')
[ "$owner" = gitops ] || fail "LOG_LEVEL owned by '$owner'"
echo PASS
