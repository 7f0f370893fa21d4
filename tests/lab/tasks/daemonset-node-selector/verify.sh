#!/usr/bin/env bash
# Verify: exit 0 only when the incident is resolved.
. "$(dirname "$0")/../lib.sh"
eventually ds_ok agent
[ "$(jp ds/agent '{.status.desiredNumberScheduled}')" = "$(kubectl get nodes --no-headers | wc -l | tr -d ' ')" ]
