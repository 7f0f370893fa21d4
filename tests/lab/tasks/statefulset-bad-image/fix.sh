#!/usr/bin/env bash
# Fix: what an SRE would run with kubectl.
. "$(dirname "$0")/../lib.sh"
k set image statefulset/cache cache=redis:7.2
k delete pod cache-0 --wait=false
