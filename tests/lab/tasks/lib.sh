# Shared by every task's scripts: source it, then use k, eventually and the *_ok checks.
# NS names the task's namespace; WAIT is how many seconds verify waits for the cluster to
# converge (0: look once).
set -euo pipefail
NS="${NS:?NS must name the task namespace}"
WAIT="${WAIT:-60}"

k() { kubectl -n "$NS" "$@"; }

# eventually CMD ARGS…: retry CMD once a second until it succeeds or WAIT seconds pass.
eventually() {
  local end=$((SECONDS + WAIT))
  until "$@"; do
    if ((SECONDS >= end)); then
      echo "verify: not satisfied: $*" >&2
      return 1
    fi
    sleep 1
  done
}

jp() { k get "$1" -o "jsonpath=$2"; }

# A Deployment fully rolled out: every replica updated, ready and available, nothing older.
deploy_ok() {
  local want total updated ready available gen observed
  IFS=/ read -r want total updated ready available gen observed < <(jp "deploy/$1" \
    '{.spec.replicas}/{.status.replicas}/{.status.updatedReplicas}/{.status.readyReplicas}/{.status.availableReplicas}/{.metadata.generation}/{.status.observedGeneration}{"\n"}')
  [ "$want" -gt 0 ] && [ "${total:-0}" = "$want" ] && [ "${updated:-0}" = "$want" ] &&
    [ "${ready:-0}" = "$want" ] && [ "${available:-0}" = "$want" ] && [ "$gen" = "$observed" ]
}

sts_ok() {
  local want ready current update
  IFS=/ read -r want ready current update < <(jp "statefulset/$1" \
    '{.spec.replicas}/{.status.readyReplicas}/{.status.currentRevision}/{.status.updateRevision}{"\n"}')
  [ "$want" -gt 0 ] && [ "${ready:-0}" = "$want" ] && [ "$current" = "$update" ]
}

ds_ok() {
  local desired ready updated
  IFS=/ read -r desired ready updated < <(jp "daemonset/$1" \
    '{.status.desiredNumberScheduled}/{.status.numberReady}/{.status.updatedNumberScheduled}{"\n"}')
  [ "${desired:-0}" -gt 0 ] && [ "${ready:-0}" = "$desired" ] && [ "${updated:-0}" = "$desired" ]
}

# Every pod of the selector runs the image (no pod of an older template is left).
all_pods_image() {
  local images
  images=$(k get pods -l "$1" -o 'jsonpath={range .items[*]}{.spec.containers[0].image}{"\n"}{end}')
  [ -n "$images" ] && ! grep -vqx -- "$2" <<<"$images"
}

has_endpoints() { [ -n "$(jp "endpoints/$1" '{.subsets[*].addresses[*].ip}')" ]; }
