package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/kneewatch/kneewatch/config"
)

// parseAlerts reads a config file made of the given alerts section and one
// target, as `kneewatch rules --config.file` would.
func parseAlerts(t testing.TB, section string) config.Alerts {
	t.Helper()
	doc := section + "\ntargets:\n  - replica: vllm-0\n    metrics_url: http://127.0.0.1:8000/metrics\n"
	c, err := config.Parse([]byte(doc), "")
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return c.Alerts
}

// exampleConfigOptions are the options config/example.yml maps to with the
// default evaluation window. The example is read as if it sat in
// config/testdata/example-root, where its profile files exist.
func exampleConfigOptions(t testing.TB) Options {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "config", "example.yml"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(data, filepath.Join("..", "config", "testdata", "example-root", "kneewatch.yml"))
	if err != nil {
		t.Fatalf("config/example.yml: %v", err)
	}
	o, err := FromConfig(c.Alerts, config.DefaultSettings().Window.D())
	if err != nil {
		t.Fatalf("config/example.yml: %v", err)
	}
	return o
}

// changedAlerts sets every alert setting the config has to a value other
// than its default.
const changedAlerts = `alerts:
  headroom_low: {below: 0.3, for: 20m}
  headroom_exhausted: {below: 0.1, for: 30s, hold: 1m, sustain_requests: 50, quick_requests: 20, quick_below: -0.3, predict_window: 5m, predict_guard: 0.25}
  slo_objective: 0.995
  kv_pressure: {margin: 0.1, preemptions_per_second: 2, for: 1m}
  probes_failing: {success_warning: 0.8, for: 3m, all_failing_for: 2m}
  fleet_capacity: {for: 45s}
  runbook_base_url: https://wiki.example.com/runbooks/
  dashboard_base_url: https://grafana.example.com/
  labels: {team: llm-serving}
`

func TestFromConfigAppliesEveryAlertSetting(t *testing.T) {
	tests := []struct {
		name    string
		section string
		window  time.Duration
		want    func(*Options)
	}{
		{"the config's defaults give the default options, with dashboard links relative to Grafana's root",
			"", time.Minute, func(o *Options) { o.DashboardBaseURL = "" }},
		{"changed thresholds, for durations, objective, URLs and labels all reach the options",
			changedAlerts, 10 * time.Second, func(o *Options) {
				o.HeadroomLow = HeadroomLowOptions{Below: 0.3, For: 20 * time.Minute}
				o.HeadroomExhausted.Below = 0.1
				o.HeadroomExhausted.For = 30 * time.Second
				o.HeadroomExhausted.BelowHold = time.Minute
				o.HeadroomExhausted.SustainRequests = 50
				o.HeadroomExhausted.QuickRequests, o.HeadroomExhausted.QuickBelow = 20, -0.3
				o.HeadroomExhausted.SustainBaseWindow = 10 * time.Second
				o.HeadroomExhausted.PredictHorizon = 5 * time.Minute
				o.HeadroomExhausted.PredictBelow = 0.25
				o.SLO.Objective = 0.995
				o.KVCache.Margin, o.KVCache.PreemptionsPerSecond, o.KVCache.For = 0.1, 2, time.Minute
				o.Probes.SuccessBelow, o.Probes.SuccessFor, o.Probes.FailingWindow = 0.8, 3*time.Minute, 2*time.Minute
				o.Fleet.For = 45 * time.Second
				o.RunbookBaseURL = "https://wiki.example.com/runbooks"
				o.DashboardBaseURL = "https://grafana.example.com"
				o.ExtraLabels = map[string]string{"team": "llm-serving"}
				o.Ruler.Window = 10 * time.Second
			}},
		{"an explicitly empty runbook base URL keeps kneewatch's runbooks",
			"alerts:\n  runbook_base_url: \"\"\n", time.Minute, func(o *Options) { o.DashboardBaseURL = "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromConfig(parseAlerts(t, tc.section), tc.window)
			if err != nil {
				t.Fatal(err)
			}
			want := DefaultOptions()
			tc.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConfiguredValuesReachTheRenderedRules follows each changed setting
// from the config file into the rule that uses it.
func TestConfiguredValuesReachTheRenderedRules(t *testing.T) {
	o, err := FromConfig(parseAlerts(t, changedAlerts), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]rulefmt.Rule{}
	for _, g := range groups {
		for _, r := range g.Rules {
			rules[r.Alert+r.Record] = r
		}
	}
	tests := []struct {
		name     string
		rule     string
		wantExpr []string
		wantFor  string
	}{
		{"the warning threshold and its for", AlertHeadroomLow, []string{"kneewatch_replica_headroom_ratio < 0.3"}, "20m"},
		{"the page threshold and hold, prediction horizon and guard, and its for", AlertHeadroomExhausted,
			[]string{"max_over_time(kneewatch:replica_headroom_ratio:sustained[1m]) < 0.1", "kneewatch:replica_headroom_ratio:sustained < 0.25", "[5m], 300)"}, "30s"},
		{"the page's request count in the sustained headroom", RecordSustainedHeadroom, []string{">= 50"}, "0s"},
		{"the quick arm's threshold and hold", AlertHeadroomExhausted, []string{"max_over_time(kneewatch:replica_headroom_ratio:quick[1m]) < -0.3"}, "30s"},
		{"the quick arm's request count in its headroom", RecordQuickHeadroom, []string{">= 20"}, "0s"},
		{"the SLO objective's error budget in the fast burn", AlertGoodputSLOBurnFast, []string{"14.4 * 0.005"}, "2m"},
		{"the SLO objective's error budget in the slow burn", AlertGoodputSLOBurnSlow, []string{"3 * 0.005"}, "15m"},
		{"the KV margin and preemption rate, and their for", AlertKVCachePressure, []string{"+ 0.1", "> 2"}, "1m"},
		{"the span of all probes failing", AlertProbesFailing, []string{"kneewatch:probe_success_ratio:rate2m == 0"}, "1m"},
		{"the probe success threshold and its for", AlertProbeSuccessLow, []string{"< 0.8"}, "3m"},
		{"the fleet capacity for", AlertFleetCapacityLow, nil, "45s"},
		{"the evaluation window in the ruler group", "kneewatch:replica_headroom_ratio:avg10s",
			[]string{"avg_over_time(vllm:num_requests_running[10s])"}, "0s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := rules[tc.rule]
			if !ok {
				t.Fatalf("no rule %s", tc.rule)
			}
			// Expressions are pretty-printed over several lines.
			expr := strings.Join(strings.Fields(r.Expr), " ")
			for _, s := range tc.wantExpr {
				if !strings.Contains(expr, s) && !strings.Contains(r.Expr, s) {
					t.Errorf("%s's expression does not contain %q:\n%s", tc.rule, s, r.Expr)
				}
			}
			if got := r.For.String(); got != tc.wantFor {
				t.Errorf("%s has for %s, want %s", tc.rule, got, tc.wantFor)
			}
		})
	}
	for name, r := range rules {
		if r.Alert == "" {
			continue
		}
		if r.Labels["team"] != "llm-serving" {
			t.Errorf("%s lacks the configured label team=llm-serving: %v", name, r.Labels)
		}
		if u := r.Annotations["runbook_url"]; u != "https://wiki.example.com/runbooks/"+name+".md" {
			t.Errorf("%s links runbook %q", name, u)
		}
		if u := r.Annotations["dashboard_url"]; !strings.HasPrefix(u, "https://grafana.example.com/d/kneewatch-") {
			t.Errorf("%s links dashboard %q", name, u)
		}
	}
}

func TestFromConfigRejectsAnUnusableEvaluationWindow(t *testing.T) {
	_, err := FromConfig(config.DefaultAlerts(), 0)
	want := "alerts section: --evaluation.window: must be above 0, got 0s"
	if err == nil || err.Error() != want {
		t.Errorf("FromConfig with a zero window: %v, want %q", err, want)
	}
}

// TestConfigRejectsEveryLabelTheRulesReserve keeps the config's validation
// in step with the rules': a label the rules would refuse must already be
// refused when the config file is loaded, naming the config field.
func TestConfigRejectsEveryLabelTheRulesReserve(t *testing.T) {
	for _, name := range reservedAlertLabels {
		t.Run(name, func(t *testing.T) {
			doc := "alerts:\n  labels:\n    " + name + ": x\ntargets:\n  - replica: vllm-0\n    metrics_url: http://127.0.0.1:8000/metrics\n"
			_, err := config.Parse([]byte(doc), "")
			if err == nil || !strings.Contains(err.Error(), "alerts.labels: \""+name+"\"") {
				t.Errorf("a config with alert label %s: %v, want an error naming alerts.labels", name, err)
			}
		})
	}
}

// TestTheConfigDefaultsAreTheRulesDefaults keeps the two places alert
// defaults are written in step: the config file's (config.DefaultAlerts,
// what an alerts section leaves unset becomes) and the rules' own
// (DefaultOptions, what `kneewatch rules` without a config generates). The
// config package cannot read the rules' defaults (rules imports config), so
// this test is what makes them one definition.
func TestTheConfigDefaultsAreTheRulesDefaults(t *testing.T) {
	want := DefaultOptions()
	got, err := FromConfig(config.DefaultAlerts(), want.Ruler.Window)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the config's alert defaults differ from DefaultOptions (-rules +config):\n%s", diff)
	}
}

// An option the config sets is named by its config key, not the Go field,
// in FromConfig's errors: that is what the user edits.
func TestFromConfigNamesTheConfigKeysOfBadOptions(t *testing.T) {
	a := config.DefaultAlerts()
	a.HeadroomExhausted.PredictWindow = config.Duration(10 * time.Minute)
	a.HeadroomExhausted.PredictConfirm = config.Duration(6 * time.Minute)
	a.HeadroomExhausted.Hold = config.Duration(-time.Second)
	_, err := FromConfig(a, time.Minute)
	want := "alerts section: alerts.headroom_exhausted.hold: must not be negative, got -1s\n" +
		"alerts.headroom_exhausted.predict_confirm: 6m must be shorter than the trend's lookback (5m): it confirms the most recent part of the trend"
	if err == nil || err.Error() != want {
		t.Errorf("FromConfig = %v, want %q", err, want)
	}
}
