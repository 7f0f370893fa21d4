#!/usr/bin/env bash
# Fix: what an SRE would run with kubectl.
. "$(dirname "$0")/../lib.sh"
k delete configmap app-config
k create configmap app-config --from-literal=MODE=blue
k rollout restart deploy/app
