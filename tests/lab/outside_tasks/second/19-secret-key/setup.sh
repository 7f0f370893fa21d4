NS=t19-secret-key
. "$(dirname "$0")/../lib.sh"
$K create ns $NS
k create secret generic db-creds --from-literal=passwd=s3cret
cat <<Y | k apply -f -
apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: 1
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: busybox:1.36
        command: ["sleep","3600"]
        env:
        - name: DB_PASSWORD
          valueFrom: {secretKeyRef: {name: db-creds, key: password}}
Y
