#!/bin/bash
# run.sh NN-name | all
cd "$(dirname "$0")"
K="${KUBECTL:-kubectl}"
run_one() {
  local t=$1 ns res=PASS why=""
  ns=$(grep -m1 '^NS=' "$t/setup.sh" | cut -d= -f2)
  echo "=== $t (ns $ns)"
  if ! bash "$t/setup.sh" > "$t/setup.out" 2>&1; then res=FAIL; why="setup failed"; fi
  if [ $res = PASS ]; then
    if bash "$t/verify.sh" > "$t/verify-before.out" 2>&1; then res=FAIL; why="verify passed before fix"; fi
  fi
  if [ $res = PASS ]; then
    if ! bash "$t/fix.sh" > "$t/fix.out" 2>&1; then res=FAIL; why="fix failed"; fi
  fi
  if [ $res = PASS ]; then
    if ! bash "$t/verify.sh" > "$t/verify-after.out" 2>&1; then res=FAIL; why="verify failed after fix"; fi
  fi
  $K delete ns "$ns" --wait=false >/dev/null 2>&1
  printf '%-28s %s %s\n' "$t" "$res" "$why" | tee -a "$RESULTS"
}
if [ "$1" = all ]; then
  RESULTS=results.txt; : > $RESULTS
  for t in [12][0-9]-*/; do run_one "${t%/}"; done
  echo; cat $RESULTS
else
  RESULTS=/dev/null; run_one "$1"
fi
