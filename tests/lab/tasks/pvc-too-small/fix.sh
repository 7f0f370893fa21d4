#!/usr/bin/env bash
# Fix: what an SRE would run with kubectl.
. "$(dirname "$0")/../lib.sh"
k patch pvc data -p '{"spec":{"resources":{"requests":{"storage":"5Gi"}}}}'
