#!/usr/bin/env bash
# Verify: exit 0 only when the incident is resolved.
. "$(dirname "$0")/../lib.sh"
eventually has_endpoints web
[ "$(jp svc/web '{.spec.ports[0].protocol}')" = TCP ]
