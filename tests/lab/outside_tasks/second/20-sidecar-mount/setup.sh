NS=t20-sidecar-mount
. "$(dirname "$0")/../lib.sh"
$K create ns $NS
cat > "$(dirname "$0")/deploy.yaml" <<Y
apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: 1
  selector: {matchLabels: {app: app}}
  template:
    metadata:
      labels: {app: app}
      annotations: {kubectl.kubernetes.io/default-container: writer}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: writer
        image: busybox:1.36
        command: ["sh","-c","while true; do echo report-ok > /shared/report.txt; sleep 2; done"]
        volumeMounts: [{name: shared, mountPath: /shared}]
      - name: reader
        image: busybox:1.36
        command: ["sleep","3600"]
        volumeMounts: [{name: shared, mountPath: /var/www}]
      volumes: [{name: shared, emptyDir: {}}]
Y
k apply -f "$(dirname "$0")/deploy.yaml"
