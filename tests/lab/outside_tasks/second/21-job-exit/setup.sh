NS=t21-job-exit
. "$(dirname "$0")/../lib.sh"
$K create ns $NS
k apply -f "$(dirname "$0")/job.yaml"
