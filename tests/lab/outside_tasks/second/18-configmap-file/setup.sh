NS=t18-configmap-file
. "$(dirname "$0")/../lib.sh"
$K create ns $NS
k create configmap site --from-literal=index.html='<h1>maintenance</h1>'
cat <<Y | k apply -f -
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports: [{containerPort: 80}]
        volumeMounts: [{name: site, mountPath: /usr/share/nginx/html}]
      volumes: [{name: site, configMap: {name: site}}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
Y
client_pod
