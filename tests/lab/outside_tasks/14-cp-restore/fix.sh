#!/bin/bash
set -e; NS=t14; . "$(dirname "$0")/../lib.sh"
k cp /tmp/t14/seed.csv store:/data/seed/seed.csv
printf 'version=3\n' | k exec -i store -- sh -c 'cat > /data/seed/VERSION'
