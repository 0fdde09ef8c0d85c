package tests

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/promql/parser"
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

// valuesFile writes chart values to a file, for helm --values: a values
// file keeps numbers numbers, where --set makes 0.3 a string.
func valuesFile(t *testing.T, values map[string]any) string {
	t.Helper()
	data, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// alertValues are chart values setting config.alerts (and the other values
// the rules read: config.global.target_headroom, evaluationWindow).
func alertValues(alerts map[string]any, more ...any) map[string]any {
	v := map[string]any{"config": map[string]any{}}
	if alerts != nil {
		v["config"].(map[string]any)["alerts"] = alerts
	}
	for i := 0; i+1 < len(more); i += 2 {
		switch k := more[i].(string); k {
		case "target_headroom":
			v["config"].(map[string]any)["global"] = map[string]any{"target_headroom": more[i+1]}
		default:
			v[k] = more[i+1]
		}
	}
	return v
}

// alertValueSets are value sets the chart's PrometheusRule must follow,
// each changing the rules: the conventions applied by the chart's own
// template, thresholds, durations (written in any form Prometheus reads),
// the values the rule template follows with a conditional, and edge
// numbers where printing is delicate.
var alertValueSets = []struct {
	name   string
	values map[string]any
}{
	{"alert labels", alertValues(map[string]any{"labels": map[string]any{"team": "ml-platform", "tier": "serving"}})},
	{"disabled alerts", alertValues(map[string]any{"disabled": []any{"KneewatchProbeSuccessLow", "KneewatchKVCachePressure"}})},
	{"a Grafana URL", alertValues(map[string]any{"dashboard_base_url": "https://grafana.corp.example/"})},
	{"a runbook URL", alertValues(map[string]any{"runbook_base_url": "https://wiki.corp.example/runbooks"})},
	{"the warning at 30% for 5m", alertValues(map[string]any{"headroom_low": map[string]any{"below": 0.3, "for": "5m"}})},
	{"every threshold and duration changed", alertValues(map[string]any{
		"headroom_low":       map[string]any{"below": 0.35, "for": "600s"},
		"headroom_exhausted": map[string]any{"below": 0.05, "for": "1m30s", "hold": "45s", "sustain_requests": 250, "recovered_above": 0.3, "keep_firing_for": "0", "predict_guard": 0.5, "predict_confirm": "2m", "watched_for": "5m"},
		"past_knee":          map[string]any{"below": -0.1, "for": "0s", "keep_firing_for": "1h"},
		"slo_objective":      0.999,
		"kv_pressure":        map[string]any{"margin": 0.1, "preemptions_per_second": 2, "for": "1m"},
		"probes_failing":     map[string]any{"success_warning": 0.8, "for": "3m", "all_failing_for": "2m"},
		"fleet_capacity":     map[string]any{"for": "1d"},
	}, "target_headroom", 0.25, "evaluationWindow", "2m")},
	{"all probes failing over the warning's 10m window (one recording rule)", alertValues(map[string]any{"probes_failing": map[string]any{"all_failing_for": "10m"}})},
	{"all probes failing over 15m, longer than the warning's window", alertValues(map[string]any{"probes_failing": map[string]any{"all_failing_for": "15m"}})},
	{"edge numbers and durations", alertValues(map[string]any{
		"headroom_low":       map[string]any{"below": 0.12345, "for": "7d"},
		"headroom_exhausted": map[string]any{"below": 0.07, "hold": "1500ms", "sustain_requests": 2000000, "recovered_above": 1, "keep_firing_for": "365d", "watched_for": "1500ms"},
		"past_knee":          map[string]any{"below": -0.999999},
		"slo_objective":      0.99999999999999,
		"kv_pressure":        map[string]any{"margin": 0, "preemptions_per_second": 1e-07},
		"probes_failing":     map[string]any{"success_warning": 1, "for": "1y"},
	}, "target_headroom", 0, "evaluationWindow", "90s")},
	{"all of them", alertValues(map[string]any{
		"labels": map[string]any{"team": "ml-platform"}, "disabled": []any{"KneewatchAbsent"},
		"dashboard_base_url": "https://grafana.corp.example", "runbook_base_url": "https://wiki.corp.example/runbooks/",
		"headroom_low": map[string]any{"below": 0.25}, "slo_objective": 0.995,
	})},
}

// drawAlertValues draws values anywhere in each key's valid range (with the
// checks between keys), numbers with one to six decimals, durations in
// whatever form Prometheus reads, leaving out now and then a key (its
// default applies) and never a value the chart's template refuses.
func drawAlertValues(r *rand.Rand) map[string]any {
	decimals := func(v float64) float64 {
		p := math.Pow(10, float64(1+r.IntN(6)))
		return math.Round(v*p) / p
	}
	between := func(lo, hi float64) float64 {
		for {
			if v := decimals(lo + r.Float64()*(hi-lo)); v > lo && v < hi {
				return v
			}
		}
	}
	duration := func(zero bool) any {
		if zero && r.IntN(5) == 0 {
			return []any{"0s", "0", 0}[r.IntN(3)]
		}
		s := 1 + r.IntN(3*86400)
		switch r.IntN(4) {
		case 0:
			return fmt.Sprintf("%ds", s)
		case 1:
			return fmt.Sprintf("%dh%dm", s/3600, s%3600/60+1)
		case 2:
			return fmt.Sprintf("%dd%dms", 1+r.IntN(30), r.IntN(1000)) // never in a PromQL range
		default:
			return fmt.Sprintf("%dm", 1+r.IntN(600))
		}
	}
	rangeDuration := func() any { // whole seconds: PromQL ranges
		return []any{fmt.Sprintf("%ds", 1+r.IntN(7200)), fmt.Sprintf("%dm", 1+r.IntN(120)), "10m"}[r.IntN(3)]
	}
	low := between(0, 1)
	below := 0.0
	if r.IntN(2) == 0 {
		below = between(0, low)
	}
	knee := below
	if r.IntN(3) > 0 {
		knee = between(-1, below)
	}
	sustain := 2 + r.IntN(100000)
	a := map[string]any{
		"headroom_low": map[string]any{"below": low, "for": duration(true)},
		"headroom_exhausted": map[string]any{
			"below": below, "for": duration(true), "hold": rangeDuration(),
			"sustain_requests": sustain, "recovered_above": between(below, 1),
			"quick_requests": 1 + r.IntN(sustain-1), "quick_below": between(-2, below),
			"predict_guard": between(below, 1), "keep_firing_for": duration(true),
			"predict_confirm": fmt.Sprintf("%ds", r.IntN(300)),
			"watched_for":     rangeDuration(),
		},
		"past_knee":     map[string]any{"below": knee, "for": duration(true), "keep_firing_for": duration(true)},
		"slo_objective": between(0.931, 1),
		"kv_pressure":   map[string]any{"margin": []float64{0, between(0, 1)}[r.IntN(2)], "preemptions_per_second": decimals(math.Pow(10, -4+6*r.Float64())) + 0.0001, "for": duration(true)},
		"probes_failing": map[string]any{"success_warning": []float64{1, between(0, 1)}[r.IntN(2)], "for": duration(true),
			"all_failing_for": rangeDuration()},
		"fleet_capacity": map[string]any{"for": duration(true)},
	}
	for _, v := range a {
		if m, ok := v.(map[string]any); ok && r.IntN(4) == 0 {
			delete(m, "for") // its default applies
		}
	}
	return alertValues(a, "target_headroom", []float64{0, between(0, 1)}[r.IntN(2)], "evaluationWindow", rangeDuration())
}

// rendersAsKneewatchRules renders the chart with values and compares its
// PrometheusRule's spec with `kneewatch rules --format prometheusrule` over
// the kneewatch.yml and --evaluation.window of the same render: equal, with
// PromQL compared as parsed expressions (a longer number can move the
// printer's line breaks). It returns the spec.
func rendersAsKneewatchRules(t *testing.T, bin string, values map[string]any) any {
	t.Helper()
	vf := valuesFile(t, values)
	objs := manifests(t, helmTemplate(t, vf))
	rendered := find(t, objs, "PrometheusRule", "")
	window := ""
	args, _ := dig(workload(t, objs), "spec", "template", "spec", "containers", 0, "args").([]any)
	for _, a := range args {
		if w, ok := strings.CutPrefix(a.(string), "--evaluation.window="); ok {
			window = w
		}
	}
	if window == "" {
		t.Fatal("the Deployment passes no --evaluation.window")
	}
	out := command(t, nil, nil, bin, "rules", "--format", "prometheusrule", "--config.file", renderedConfig(t, vf, nil), "--evaluation.window", window)
	var want map[string]any
	if err := yaml.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(parsedPromQL(t, want["spec"]), parsedPromQL(t, rendered["spec"])); diff != "" {
		t.Errorf("the chart's PrometheusRule differs from kneewatch rules over its config (-kneewatch +chart):\n%s", diff)
	}
	return rendered["spec"]
}

// parsedPromQL is a PrometheusRule spec with every expr replaced by its
// parsed expression, printed on one line.
func parsedPromQL(t *testing.T, spec any) any {
	t.Helper()
	p := parser.NewParser(parser.Options{})
	out := toText(t, spec)
	var copied map[string]any
	if err := yaml.Unmarshal([]byte(out), &copied); err != nil {
		t.Fatal(err)
	}
	groups, _ := copied["groups"].([]any)
	for _, g := range groups {
		rules, _ := dig(g, "rules").([]any)
		for _, r := range rules {
			rule := r.(map[string]any)
			e, err := p.ParseExpr(rule["expr"].(string))
			if err != nil {
				t.Fatalf("%v%v: expr does not parse: %v", rule["record"], rule["alert"], err)
			}
			rule["expr"] = e.String()
		}
	}
	return copied
}

// TestPrometheusRuleIsKneewatchRulesForTheSameConfig is what makes the
// chart's PrometheusRule "the same generator's": for each value set, the
// hand-picked ones and values drawn anywhere in each key's range, the
// rendered PrometheusRule's spec equals what `kneewatch rules` prints for
// the config the same render hands the pod, and differs from the defaults'.
func TestPrometheusRuleIsKneewatchRulesForTheSameConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kneewatch command; not in -short")
	}
	bin := kneewatchBinary(t)
	defaults := rendersAsKneewatchRules(t, bin, map[string]any{})
	sets := alertValueSets
	r := rand.New(rand.NewPCG(16, 1))
	for i := range 6 {
		sets = append(sets, struct {
			name   string
			values map[string]any
		}{fmt.Sprintf("drawn values %d", i+1), drawAlertValues(r)})
	}
	for _, vs := range sets {
		t.Run(vs.name, func(t *testing.T) {
			spec := rendersAsKneewatchRules(t, bin, vs.values)
			// Each value set must change the rules, or the equality shows nothing.
			if cmp.Equal(parsedPromQL(t, spec), parsedPromQL(t, defaults)) {
				t.Errorf("the values render the same PrometheusRule as the defaults:\n%s", toText(t, vs.values))
			}
			if t.Failed() {
				t.Logf("values:\n%s", toText(t, vs.values))
			}
		})
	}
}

// TestPrometheusRuleRefusesValuesItsTemplateCannotFollow checks the values
// that change the rules' structure stop the render with directions,
// instead of being ignored, and that prometheusRule.generated (kneewatch's
// own output for that config) is then used as given.
func TestPrometheusRuleRefusesValuesItsTemplateCannotFollow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kneewatch command; not in -short")
	}
	for _, tc := range []struct {
		name, key string
		value     any
		complaint string
	}{
		{"a page without its hold", "hold", "0s", "config.alerts.headroom_exhausted.hold: 0s takes the hold out of the page's level arm"},
		{"a page on the exported headroom", "sustain_requests", 0, "config.alerts.headroom_exhausted.sustain_requests: 0 makes the page read the exported headroom"},
		{"a page without its recovery guard", "recovered_above", 0, "config.alerts.headroom_exhausted.recovered_above: 0 takes the recovery guard out"},
		{"a page with a trend arm", "predict_window", "10m", "config.alerts.headroom_exhausted.predict_window: 10m adds the trend arm to the page"},
		{"a page on a replica just watched", "watched_for", "0s", "config.alerts.headroom_exhausted.watched_for: 0s takes the new-replica wait out of the page"},
	} {
		t.Run(tc.name+" is refused with directions", func(t *testing.T) {
			vf := valuesFile(t, alertValues(map[string]any{"headroom_exhausted": map[string]any{tc.key: tc.value}}))
			_, err := tryCommand(helmEnv(t, ""), nil, testtools.Path(t, "helm"), "template", "kneewatch", chartDir(), "--api-versions", monitoringAPI, "--values", vf)
			var ce *commandError
			if !errors.As(err, &ce) || !strings.Contains(ce.stderr, tc.complaint) || !strings.Contains(ce.stderr, "--set-file prometheusRule.generated=rules.yaml") {
				t.Fatalf("err = %v, want the chart to refuse it (%q) with directions", err, tc.complaint)
			}
		})
	}

	bin := kneewatchBinary(t)
	vf := valuesFile(t, alertValues(map[string]any{"headroom_exhausted": map[string]any{"predict_window": "10m", "predict_guard": 0.5}}))
	// The config is rendered with the chart's refusal off: prometheusRule off.
	cfg := renderedConfig(t, vf, []string{"--set", "prometheusRule.enabled=false"})
	generated := filepath.Join(t.TempDir(), "rules.yaml")
	command(t, nil, nil, bin, "rules", "--format", "prometheusrule", "--config.file", cfg, "--out", generated)
	rule := find(t, manifests(t, helmTemplate(t, vf, "--set-file", "prometheusRule.generated="+generated)), "PrometheusRule", "")
	want := readYAML(t, generated)
	if diff := cmp.Diff(want["spec"], rule["spec"]); diff != "" {
		t.Errorf("the PrometheusRule differs from prometheusRule.generated (-generated +chart):\n%s", diff)
	}
	if !strings.Contains(toText(t, rule["spec"]), "predict_linear(") {
		t.Errorf("the generated trend arm is not in the PrometheusRule")
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
