#!/usr/bin/env bash
# Fix: what an SRE would run with kubectl.
. "$(dirname "$0")/../lib.sh"
k create secret generic db-credentials --from-literal=password=s3cret
