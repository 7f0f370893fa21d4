NS=t25-svc-port-name
. "$(dirname "$0")/../lib.sh"
$K create ns $NS
cat <<Y | k apply -f -
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: httpd
        image: httpd:2.4
        ports: [{containerPort: 80, name: web-http}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 8080, targetPort: http}]
Y
client_pod
rolled_out web
