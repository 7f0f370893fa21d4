#!/bin/bash
set -e; NS=t08; . "$(dirname "$0")/../lib.sh"
k get svc
k expose deployment redis --name=redis --port=6379
