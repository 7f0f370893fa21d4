NS=t26-scaled-zero-cp
. "$(dirname "$0")/../lib.sh"
$K create ns $NS
cat <<Y | k apply -f -
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker}
spec:
  replicas: 0
  selector: {matchLabels: {app: worker}}
  template:
    metadata: {labels: {app: worker}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: worker
        image: busybox:1.36
        command: ["sh","-c","while [ ! -f /work/license.key ]; do echo waiting for license; sleep 1; done; echo \"licensed to \$(cat /work/license.key)\"; i=0; while true; do i=\$((i+1)); echo tick \$i; sleep 1; done"]
        volumeMounts: [{name: work, mountPath: /work}]
      volumes: [{name: work, emptyDir: {}}]
Y
