#!/usr/bin/env bash
# Fix: what an SRE would run with kubectl.
. "$(dirname "$0")/../lib.sh"
k patch ds agent --type=json -p '[{"op":"remove","path":"/spec/template/spec/nodeSelector"}]'
