package tests

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// monitoringKinds are the prometheus-operator kinds in a render.
func monitoringKinds(t *testing.T, rendered []byte) []string {
	t.Helper()
	var kinds []string
	for _, o := range manifests(t, rendered) {
		if k, _ := o["kind"].(string); k == "ServiceMonitor" || k == "PrometheusRule" {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	return kinds
}

// TestMonitoringObjectsFollowTheCapabilities checks the gate on
// monitoring.coreos.com/v1 with `helm template`, which sees the API versions
// it is told: the objects appear only when the API is served, unless the
// check is turned off. The install against a real API server is in
// TestHelmInstallWithoutThenWithCRDs.
func TestMonitoringObjectsFollowTheCapabilities(t *testing.T) {
	helm := testtools.Path(t, "helm")
	render := func(t *testing.T, args ...string) []byte {
		return command(t, helmEnv(t, ""), nil, helm, append([]string{"template", "kneewatch", chartDir()}, args...)...)
	}
	both := []string{"PrometheusRule", "ServiceMonitor"}
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"without the API, none", nil, nil},
		{"with the API, both", []string{"--api-versions", monitoringAPI}, both},
		{"without the API but the check off, both", []string{"--set", "monitoringCapabilityCheck=false"}, both},
		{"with the API and both disabled, none", []string{"--api-versions", monitoringAPI,
			"--set", "serviceMonitor.enabled=false", "--set", "prometheusRule.enabled=false"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, monitoringKinds(t, render(t, tt.args...))); diff != "" {
				t.Errorf("monitoring objects (-want +got):\n%s", diff)
			}
		})
	}
}
