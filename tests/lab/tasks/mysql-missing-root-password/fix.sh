#!/usr/bin/env bash
# Fix: what an SRE would run with kubectl.
. "$(dirname "$0")/../lib.sh"
k set env deploy/db MYSQL_ROOT_PASSWORD=s3cret
