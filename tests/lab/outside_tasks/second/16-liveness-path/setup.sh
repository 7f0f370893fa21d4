NS=t16-liveness-path
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
      - name: nginx
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}]
        livenessProbe:
          httpGet: {path: /healthz, port: http}
          periodSeconds: 2
          failureThreshold: 2
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
Y
