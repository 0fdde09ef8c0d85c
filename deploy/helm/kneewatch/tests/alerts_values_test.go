package tests

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/internal/testtools"
)

// renderFails renders the chart with values and returns helm's error
// output, failing the test if the render succeeds.
func renderFails(t *testing.T, values map[string]any) string {
	t.Helper()
	_, err := tryCommand(helmEnv(t, ""), nil, testtools.Path(t, "helm"), "template", "kneewatch", chartDir(),
		"--api-versions", monitoringAPI, "--values", valuesFile(t, values))
	var ce *commandError
	if !errors.As(err, &ce) {
		t.Fatalf("helm template succeeded (err %v) with\n%s", err, toText(t, values))
	}
	return ce.stderr
}

// TestChartRejectsTheAlertsKneewatchRejects renders the chart with the
// alerts section of each of kneewatch's invalid-alerts config fixtures, one
// per validation rule: the render must fail with kneewatch's own message,
// naming the key under config.
func TestChartRejectsTheAlertsKneewatchRejects(t *testing.T) {
	fixtures, err := filepath.Glob(filepath.Join(moduleRoot(), "config", "testdata", "invalid-alerts-*.yml"))
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no config/testdata/invalid-alerts-*.yml (%v)", err)
	}
	where := regexp.MustCompile(`^.*?: line [0-9]+: `)
	for _, f := range fixtures {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := config.Load(f)
			if err == nil {
				t.Fatal("kneewatch accepts the fixture")
			}
			message := "config." + where.ReplaceAllString(err.Error(), "")
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Alerts map[string]any `yaml:"alerts"`
			}
			if err := yaml.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			if stderr := renderFails(t, alertValues(doc.Alerts)); !strings.Contains(stderr, message) {
				t.Errorf("helm's error does not give kneewatch's message %q:\n%s", message, stderr)
			}
		})
	}
}

// TestChartRejectsBadAlertValues covers the rules' own checks and the
// values kneewatch's fixtures do not: each is refused by the template with
// a message naming the key.
func TestChartRejectsBadAlertValues(t *testing.T) {
	for _, tc := range []struct {
		name      string
		values    map[string]any
		complaint string
	}{
		{"an objective of 1.5", alertValues(map[string]any{"slo_objective": 1.5}),
			"config.alerts.slo_objective: 1.5 is outside (0, 1) (0.99 means 99% of requests meet the SLO)"},
		{"a trend confirmation as long as the trend's lookback, which kneewatch rules rejects", alertValues(map[string]any{"headroom_exhausted": map[string]any{"predict_confirm": "5m"}}),
			"config.alerts.headroom_exhausted.predict_confirm: 5m must be shorter than the page's trend lookback (5m)"},
		{"a target headroom of 1", alertValues(nil, "target_headroom", 1),
			"config.global.target_headroom: 1 is outside [0, 1)"},
		{"an evaluation window of 0", alertValues(nil, "evaluationWindow", "0s"),
			"evaluationWindow: must be above 0"},
		{"an alert label that is not a label name", alertValues(map[string]any{"labels": map[string]any{"team-name": "x"}}),
			`config.alerts.labels: "team-name" is not a valid label name`},
		{"a label Prometheus reserves", alertValues(map[string]any{"labels": map[string]any{"__tenant": "x"}}),
			`config.alerts.labels: "__tenant" starts with __, which Prometheus reserves`},
		{"a Grafana URL with a fragment", alertValues(map[string]any{"dashboard_base_url": "https://grafana.example.com/#x"}),
			`config.alerts.dashboard_base_url: "https://grafana.example.com/#x" has a #fragment`},
		{"a misspelled disabled alert", alertValues(map[string]any{"disabled": []any{"KneewatchHeadroomLo"}}),
			`config.alerts.disabled: "KneewatchHeadroomLo" is not a generated alert (want one of KneewatchHeadroomLow, `},
		{"a duration out of range", alertValues(map[string]any{"fleet_capacity": map[string]any{"for": "300y"}}),
			`config.alerts.fleet_capacity.for: "300y" is out of range`},
		{"every problem at once", alertValues(map[string]any{"slo_objective": 0.5, "kv_pressure": map[string]any{"margin": 2}}),
			"config.alerts.slo_objective: 0.5 leaves an error budget of 0.5; the 14.4× fast-burn page would need an error ratio of 7.2, above 1, so it could never fire (use 0.931 or more)\nconfig.alerts.kv_pressure.margin: 2 is outside [0, 1)"},
	} {
		t.Run(tc.name+" is rejected", func(t *testing.T) {
			if stderr := renderFails(t, tc.values); !strings.Contains(stderr, tc.complaint) {
				t.Errorf("helm's error does not say %q:\n%s", tc.complaint, stderr)
			}
		})
	}
}

// TestValuesAlertsAreKneewatchsDefaults checks values.yaml's config.alerts
// (and config.global.target_headroom) are kneewatch's defaults, with every
// key listed, so the values documentation shows what applies.
func TestValuesAlertsAreKneewatchsDefaults(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir(), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Config struct {
			Global struct {
				TargetHeadroom *float64 `yaml:"target_headroom"`
			} `yaml:"global"`
			Alerts yaml.Node `yaml:"alerts"`
		} `yaml:"config"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	if th := values.Config.Global.TargetHeadroom; th == nil || *th != config.DefaultGlobal().TargetHeadroom {
		t.Errorf("config.global.target_headroom = %v, want kneewatch's %v", th, config.DefaultGlobal().TargetHeadroom)
	}
	section, err := yaml.Marshal(map[string]any{"alerts": &values.Config.Alerts})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(append(section, "targets: [{replica: vllm-0, metrics_url: 'http://127.0.0.1:8000/metrics'}]\n"...), "values.yaml")
	if err != nil {
		t.Fatalf("kneewatch rejects values.yaml's config.alerts: %v", err)
	}
	if diff := cmp.Diff(config.DefaultAlerts(), cfg.Alerts, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("values.yaml's config.alerts are not kneewatch's defaults (-kneewatch +values):\n%s", diff)
	}
	var listed map[string]any
	if err := values.Config.Alerts.Decode(&listed); err != nil {
		t.Fatal(err)
	}
	have, want := keyPaths("", listed), yamlKeys("", reflect.TypeOf(config.Alerts{}))
	slices.Sort(have)
	slices.Sort(want)
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("values.yaml's config.alerts keys differ from kneewatch's alerts section (-kneewatch +values):\n%s", diff)
	}
}

// keyPaths lists the dotted paths of a nested map's leaves.
func keyPaths(prefix string, m map[string]any) []string {
	var out []string
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			out = append(out, keyPaths(prefix+k+".", sub)...)
			continue
		}
		out = append(out, prefix+k)
	}
	return out
}

// yamlKeys lists the dotted YAML key paths of a config struct's leaves.
func yamlKeys(prefix string, t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			out = append(out, yamlKeys(prefix+name+".", f.Type)...)
			continue
		}
		out = append(out, prefix+name)
	}
	return out
}
