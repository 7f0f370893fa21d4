#!/usr/bin/env bash
# Verify: exit 0 only when the incident is resolved.
. "$(dirname "$0")/../lib.sh"
capacity_grown() { [ "$(jp pvc/data '{.status.capacity.storage}')" = 5Gi ]; }
eventually capacity_grown
