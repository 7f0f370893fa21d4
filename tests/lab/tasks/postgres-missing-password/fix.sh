#!/usr/bin/env bash
# Fix: what an SRE would run with kubectl.
. "$(dirname "$0")/../lib.sh"
k create secret generic db --from-literal=POSTGRES_PASSWORD=s3cret
k set env deploy/db --from=secret/db
