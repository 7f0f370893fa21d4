NS=t17-oomkilled
. "$(dirname "$0")/../lib.sh"
$K create ns $NS
cat <<Y | k apply -f -
apiVersion: apps/v1
kind: Deployment
metadata: {name: db}
spec:
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: mysql
        image: mysql:8.0
        env: [{name: MYSQL_ROOT_PASSWORD, value: hunter2}]
        ports: [{containerPort: 3306}]
        readinessProbe: {tcpSocket: {port: 3306}, periodSeconds: 2}
        resources:
          requests: {memory: 64Mi}
          limits: {memory: 64Mi}
Y
