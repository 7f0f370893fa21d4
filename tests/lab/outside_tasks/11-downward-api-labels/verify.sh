#!/bin/bash
NS=t11; . "$(dirname "$0")/../lib.sh"
labels=$(k exec app -- cat /etc/podinfo/labels); echo "$labels"
echo "$labels" | grep -qx 'tier="frontend"' || fail "tier label not in downward API file"
echo "$labels" | grep -qx 'app="shop"' || fail "app label format"
k exec app -- cat /etc/podinfo/annotations | grep -qx 'owner="team-a"' || fail "annotation"
k exec app -- env | grep -qx MY_POD_NAME=app || fail "MY_POD_NAME"
node=$(k get pod app -o jsonpath='{.spec.nodeName}')
k exec app -- env | grep -qx "MY_NODE=$node" || fail "MY_NODE"
k exec app -- env | grep -qx MEM_LIMIT=64 || fail "MEM_LIMIT"
echo PASS
