#!/usr/bin/env bash
# Fix: what an SRE would run with kubectl.
. "$(dirname "$0")/../lib.sh"
k set resources deploy/db --limits=memory=1Gi --requests=memory=512Mi
