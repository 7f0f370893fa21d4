NS=t20-sidecar-mount
. "$(dirname "$0")/../lib.sh"
set -e
sed -i 's#mountPath: /var/www#mountPath: /srv/data#' "$(dirname "$0")/deploy.yaml"
k apply -f "$(dirname "$0")/deploy.yaml"
rolled_out app
