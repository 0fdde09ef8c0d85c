#!/usr/bin/env bash
# Generate offline kubeconform schemas into $3: Kubernetes kinds from the
# OpenAPI spec inside the k8s.io/kubernetes $1 module, and the
# prometheus-operator CRDs (ServiceMonitor, PrometheusRule, PodMonitor) from
# the github.com/prometheus-operator/prometheus-operator $2 module, whose
# manifests are also copied to $3/crds for the kube-apiserver tests.
# kubeconform's own schema download cannot work without the internet.
set -euo pipefail
k8s_version=$1 operator_version=$2 out=$3
moddir() {
  go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}
k8s=$(moddir "k8s.io/kubernetes@${k8s_version}")
operator=$(moddir "github.com/prometheus-operator/prometheus-operator@${operator_version}")
[ -n "$k8s" ] && [ -n "$operator" ] || { echo "cannot download the modules holding the schemas" >&2; exit 1; }
rm -rf "$out"
cd "$(dirname "$0")/../tools/k8sschema"
go run . -swagger "$k8s/api/openapi-spec/swagger.json" \
  -crds "$operator/example/prometheus-operator-crd" \
  -crd monitoring.coreos.com_servicemonitors.yaml \
  -crd monitoring.coreos.com_prometheusrules.yaml \
  -crd monitoring.coreos.com_podmonitors.yaml \
  -out "$out"
echo "kubernetes ${k8s_version}, prometheus-operator ${operator_version}" > "$out/generated"
