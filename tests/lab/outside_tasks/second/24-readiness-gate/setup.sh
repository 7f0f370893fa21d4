NS=t24-readiness-gate
. "$(dirname "$0")/../lib.sh"
$K create ns $NS
cat <<Y | k apply -f -
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  readinessGates: [{conditionType: example.com/lb-registered}]
  containers:
  - name: nginx
    image: nginx:1.27
    ports: [{containerPort: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
Y
client_pod
k wait --for=condition=ContainersReady pod/web --timeout=60s
