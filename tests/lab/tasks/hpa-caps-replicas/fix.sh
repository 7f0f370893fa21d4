#!/usr/bin/env bash
# Fix: what an SRE would run with kubectl.
. "$(dirname "$0")/../lib.sh"
k patch hpa web -p '{"spec":{"minReplicas":3,"maxReplicas":6}}'
