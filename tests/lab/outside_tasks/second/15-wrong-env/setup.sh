NS=t15-wrong-env
. "$(dirname "$0")/../lib.sh"
$K create ns $NS
cat <<Y | k apply -f -
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: api
        image: busybox:1.36
        env: [{name: APP_MODE, value: prod}]
        command: ["sh","-c","echo \"starting mode=\$APP_MODE\"; if [ \"\$APP_MODE\" != production ]; then echo \"fatal: unknown mode \$APP_MODE\"; exit 2; fi; echo ready; sleep 3600"]
Y
