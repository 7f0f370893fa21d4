#!/usr/bin/env bash
# Fix: what an SRE would run with kubectl.
. "$(dirname "$0")/../lib.sh"
k create configmap api-config --from-literal=LOG_LEVEL=info
