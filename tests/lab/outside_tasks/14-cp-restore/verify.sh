#!/bin/bash
NS=t14; . "$(dirname "$0")/../lib.sh"
[ "$(k exec store -- wc -l /data/seed/seed.csv 2>/dev/null | awk '{print $1}')" = 3 ] || fail "seed.csv missing or wrong"
k exec store -- grep -qx '2,beta' /data/seed/seed.csv || fail "content"
rm -f /tmp/t14/back.csv; k cp store:/data/seed/seed.csv /tmp/t14/back.csv >/dev/null 2>&1
cmp -s /tmp/t14/seed.csv /tmp/t14/back.csv || fail "round-trip differs"
[ "$(k exec store -- cat /data/seed/VERSION)" = version=3 ] || fail "VERSION"
k exec store -- sh -c 'test -s /data/seed/seed.csv && md5sum /data/seed/seed.csv' | grep -q "$(md5sum < /tmp/t14/seed.csv | cut -d' ' -f1)" || fail "md5"
echo PASS
