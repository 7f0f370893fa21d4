#!/usr/bin/env bash
# Verify: exit 0 only when the incident is resolved.
. "$(dirname "$0")/../lib.sh"
eventually deploy_ok web
port=$(jp deploy/web '{.spec.template.spec.containers[0].livenessProbe.tcpSocket.port}')
[ "$port" = 80 ] || [ "$port" = http ]
