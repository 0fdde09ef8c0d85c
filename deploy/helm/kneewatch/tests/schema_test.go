package tests

import (
	"errors"
	"strings"
	"testing"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// TestValuesSchemaRejectsBadValues checks that values.schema.json stops a
// bad value at install time with a message naming the key, instead of a
// kneewatch pod that crash-loops on its config.
func TestValuesSchemaRejectsBadValues(t *testing.T) {
	helm := testtools.Path(t, "helm")
	tests := []struct {
		name, set, complaint string
	}{
		{"an unknown top-level key", "discoveryy.enabled=true", "discoveryy"},
		{"a misspelled discovery key", "discovery.labelSelecter=app=x", "labelSelecter"},
		{"a scheme other than http or https", "discovery.scheme=ftp", "/discovery/scheme"},
		{"a port out of range", "discovery.metricsPort=70000", "/discovery/metricsPort"},
		{"a metrics path without a leading slash", "discovery.metricsPath=metrics", "/discovery/metricsPath"},
		{"a namespace that is not a DNS label", "discovery.namespaces={LLM}", "/discovery/namespaces/0"},
		{"an empty label selector", "discovery.labelSelector=", "/discovery/labelSelector"},
		{"a kubernetes section in config, which discovery owns", "config.kubernetes.label_selector=a=b", "'/config'"},
		{"a profile that is not a knee profile", "profiles.x.kind=Deployment", "/profiles/x"},
		{"a bad log level", "logLevel=verbose", "/logLevel"},
		{"a misspelled sharding key", "sharding.enable=true", "enable"},
		{"sharding turned on with a string", "sharding.enabled=yes", "/sharding/enabled"},
		{"discovery off with no static targets, which leaves kneewatch nothing to watch", "discovery.enabled=false", "targets"},
		{"a duration Prometheus cannot parse", "serviceMonitor.interval=30 seconds", "/serviceMonitor/interval"},
		{"a web config key exporter-toolkit lacks", "web.config.tls_config.cert_file=x", "tls_config"},
		{"a basic auth secret selector without its key", "serviceMonitor.basicAuth.username.name=s", "/serviceMonitor/basicAuth/username"},
		{"a PDB minAvailable that is not a count or percentage", "podDisruptionBudget.minAvailable=half", "/podDisruptionBudget/minAvailable"},
		{"a release label that is not a label value", "releaseLabel=kube prometheus", "/releaseLabel"},
		{"an alert threshold given as a string (--set makes 0.3 one)", "config.alerts.headroom_low.below=0.3", "/config/alerts/headroom_low/below"},
		{"a negative alert duration", "config.alerts.headroom_low.for=-5m", "/config/alerts/headroom_low/for"},
		{"an alert duration with a unit twice", "config.alerts.kv_pressure.for=5m5m", "/config/alerts/kv_pressure/for"},
		{"a misspelled alert key", "config.alerts.headroom_low.bellow=1", "bellow"},
		{"a misspelled alert section", "config.alerts.headroom_lo.below=1", "headroom_lo"},
		{"a request count that is not whole", "config.alerts.headroom_exhausted.sustain_requests=2.5", "/config/alerts/headroom_exhausted/sustain_requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is rejected", func(t *testing.T) {
			_, err := tryCommand(helmEnv(t, ""), nil, helm, "template", "kneewatch", chartDir(), "--set", tt.set)
			var ce *commandError
			if !errors.As(err, &ce) {
				t.Fatalf("helm template --set %s succeeded (err %v)", tt.set, err)
			}
			if !strings.Contains(ce.stderr, "values don't meet the specifications of the schema") || !strings.Contains(ce.stderr, tt.complaint) {
				t.Errorf("helm's error does not name %q as a schema violation:\n%s", tt.complaint, ce.stderr)
			}
		})
	}
}

// TestBasicAuthWithoutScrapeCredentialsIsRefused: a listener demanding basic
// auth with a ServiceMonitor that sends none would fail every scrape.
func TestBasicAuthWithoutScrapeCredentialsIsRefused(t *testing.T) {
	helm := testtools.Path(t, "helm")
	_, err := tryCommand(helmEnv(t, ""), nil, helm, "template", "kneewatch", chartDir(), "--api-versions", monitoringAPI,
		"--set", "web.config.basic_auth_users.prometheus=$2y$10$x")
	if err == nil || !strings.Contains(err.Error(), "set serviceMonitor.basicAuth") {
		t.Errorf("web.config.basic_auth_users without serviceMonitor.basicAuth: err = %v", err)
	}
}
