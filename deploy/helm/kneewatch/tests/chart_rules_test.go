package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// renderedConfig renders the chart and writes the kneewatch.yml (and any
// profiles) of its ConfigMap to a directory, as the pod would see them;
// it returns the config file's path.
func renderedConfig(t *testing.T, values string, extra []string) string {
	t.Helper()
	cm := find(t, manifests(t, helmTemplate(t, values, extra...)), "ConfigMap", "kneewatch")
	data, _ := cm["data"].(map[string]any)
	dir := t.TempDir()
	for key, v := range data {
		path := key
		if name, ok := strings.CutPrefix(key, "profile-"); ok {
			path = filepath.Join("profiles", name)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, path), []byte(v.(string)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "kneewatch.yml")
}

// alertValueSets are config.alerts value sets the chart applies itself.
var alertValueSets = []struct {
	name string
	set  []string
}{
	{"default values", nil},
	{"alert labels", []string{"--set", "config.alerts.labels.team=ml-platform", "--set", "config.alerts.labels.tier=serving"}},
	{"disabled alerts", []string{"--set", "config.alerts.disabled={KneewatchProbeSuccessLow,KneewatchKVCachePressure}"}},
	{"a Grafana URL", []string{"--set", "config.alerts.dashboard_base_url=https://grafana.corp.example/"}},
	{"a runbook URL", []string{"--set", "config.alerts.runbook_base_url=https://wiki.corp.example/runbooks"}},
	{"all of them", []string{"--set", "config.alerts.labels.team=ml-platform", "--set", "config.alerts.disabled={KneewatchAbsent}",
		"--set", "config.alerts.dashboard_base_url=https://grafana.corp.example", "--set", "config.alerts.runbook_base_url=https://wiki.corp.example/runbooks/"}},
}

// TestPrometheusRuleIsKneewatchRulesForTheSameConfig is what makes the
// chart's PrometheusRule "the same generator's": for each value set, the
// rendered PrometheusRule's spec equals what `kneewatch rules` prints for
// the config the same render hands the pod.
func TestPrometheusRuleIsKneewatchRulesForTheSameConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kneewatch command; not in -short")
	}
	bin := kneewatchBinary(t)
	specs := map[string]any{}
	for _, vs := range alertValueSets {
		t.Run(vs.name, func(t *testing.T) {
			rendered := find(t, manifests(t, helmTemplate(t, "", vs.set...)), "PrometheusRule", "")
			out := command(t, nil, nil, bin, "rules", "--format", "prometheusrule", "--config.file", renderedConfig(t, "", vs.set))
			var want map[string]any
			if err := yaml.Unmarshal(out, &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want["spec"], rendered["spec"]); diff != "" {
				t.Errorf("the chart's PrometheusRule differs from kneewatch rules over its config (-kneewatch +chart):\n%s", diff)
			}
			specs[vs.name] = rendered["spec"]
		})
	}
	// Each value set must change the rules, or the equality shows nothing.
	for name, spec := range specs {
		if name != "default values" && cmp.Equal(spec, specs["default values"]) {
			t.Errorf("%s render the same PrometheusRule as the defaults", name)
		}
	}
}

// TestPrometheusRuleRefusesAlertValuesItCannotApply checks a threshold in
// config.alerts stops the render with directions, instead of being ignored,
// and that prometheusRule.generated (kneewatch's own output for that config)
// is then used as given.
func TestPrometheusRuleRefusesAlertValuesItCannotApply(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kneewatch command; not in -short")
	}
	threshold := []string{"--set-json", `config.alerts.headroom_low={"below":0.3,"for":"5m"}`}
	_, err := tryCommand(helmEnv(t, ""), nil, testtools.Path(t, "helm"), append([]string{"template", "kneewatch", chartDir(), "--api-versions", monitoringAPI}, threshold...)...)
	if err == nil || !strings.Contains(err.Error(), "config.alerts.headroom_low changes the generated rules' PromQL") {
		t.Fatalf("a threshold in config.alerts: err = %v, want the chart to refuse it", err)
	}

	_, err = tryCommand(helmEnv(t, ""), nil, testtools.Path(t, "helm"), "template", "kneewatch", chartDir(), "--api-versions", monitoringAPI,
		"--set", "config.alerts.disabled={KneewatchHeadroomLo}")
	if err == nil || !strings.Contains(err.Error(), `config.alerts.disabled: "KneewatchHeadroomLo" is not a generated alert`) {
		t.Errorf("a misspelled disabled alert: err = %v, want the chart to name it", err)
	}

	bin := kneewatchBinary(t)
	// The config is rendered with the chart's checks off: prometheusRule off.
	cfg := renderedConfig(t, "", append([]string{"--set", "prometheusRule.enabled=false"}, threshold...))
	generated := filepath.Join(t.TempDir(), "rules.yaml")
	command(t, nil, nil, bin, "rules", "--format", "prometheusrule", "--config.file", cfg, "--out", generated)
	rule := find(t, manifests(t, helmTemplate(t, "", append(threshold, "--set-file", "prometheusRule.generated="+generated)...)), "PrometheusRule", "")
	want := readYAML(t, generated)
	if diff := cmp.Diff(want["spec"], rule["spec"]); diff != "" {
		t.Errorf("the PrometheusRule differs from prometheusRule.generated (-generated +chart):\n%s", diff)
	}
	if !strings.Contains(toText(t, rule["spec"]), "kneewatch_replica_headroom_ratio < 0.3") {
		t.Errorf("the generated threshold 0.3 is not in the PrometheusRule")
	}
}

func toText(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
