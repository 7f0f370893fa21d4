#!/usr/bin/env bash
# Fix: what an SRE would run with kubectl.
. "$(dirname "$0")/../lib.sh"
k patch svc web --type=json -p '[{"op":"replace","path":"/spec/ports/0/protocol","value":"TCP"}]'
