#!/bin/bash
set -e; NS=t03; . "$(dirname "$0")/../lib.sh"
k get endpoints web
k get svc web -o jsonpath='{.spec.selector}{"\n"}'
k patch svc web --type=merge -p '{"spec":{"selector":{"app":"web"}}}'
# wait for endpoints to populate
for i in $(seq 1 30); do [ -n "$(k get endpoints web -o jsonpath='{.subsets[*].addresses[*].ip}')" ] && break; sleep 1; done
k get endpoints web
