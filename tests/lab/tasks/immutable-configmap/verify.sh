#!/usr/bin/env bash
# Verify: exit 0 only when the incident is resolved.
. "$(dirname "$0")/../lib.sh"
eventually deploy_ok app
[ "$(jp configmap/app-config '{.data.MODE}')" = blue ]
logs_blue() { k logs deploy/app | grep -qx mode=blue; }
eventually logs_blue
