#!/usr/bin/env bash
# Verify: exit 0 only when the incident is resolved.
. "$(dirname "$0")/../lib.sh"
eventually sts_ok cache
eventually all_pods_image app=cache redis:7.2
