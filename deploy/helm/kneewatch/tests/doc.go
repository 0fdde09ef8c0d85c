// Package tests checks the kneewatch Helm chart with the real tools a user
// runs: helm lint and template (golden files), kubeconform against schemas
// generated offline, and helm install, upgrade and uninstall against a real
// etcd and kube-apiserver started by the test binary. Kubernetes discovery is
// tested here too, against the same API server, so one test binary starts
// one cluster.
//
// Regenerate the golden renders and the chart's generated rules and
// dashboards with: go test ./deploy/helm/kneewatch/tests -update
package tests
