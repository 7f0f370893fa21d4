#!/bin/bash
# run.sh TASKDIR [NS] : setup, verify(expect fail), fix, verify(expect pass), delete ns
d=${1%/}; NS=$(grep -o 'NS=t[0-9]*' $d/setup.sh | head -1 | cut -d= -f2)
export KUBECONFIG=${KUBECONFIG:-/tmp/outside/kubeconfig}
log=$d/run.log; : > $log
step() { echo "== $1" | tee -a $log; shift; ( time "$@" ) >>$log 2>&1; rc=$?; echo "rc=$rc" | tee -a $log; return $rc; }
step setup bash $d/setup.sh; s=$?
step verify-before bash $d/verify.sh; v1=$?
step fix bash $d/fix.sh; f=$?
step verify-after bash $d/verify.sh; v2=$?
res=FAIL; [ $s = 0 ] && [ $v1 != 0 ] && [ $f = 0 ] && [ $v2 = 0 ] && res=OK
echo "$d setup=$s verify_before=$v1 fix=$f verify_after=$v2 => $res" | tee -a $d/../results.txt
[ -n "$KEEP" ] || kubectl delete ns $NS --timeout=60s >>$log 2>&1
