package detection

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/internal/testtools"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/rules"
)

// TestPageFiresWhenPromtoolSaysItDoes replays kneewatch's exported headroom
// from a bench run into the real promtool with the shipped page rule, and
// checks that Prometheus's own rule engine has the alert pending one
// evaluation before the moment the bench scored as the page, and firing at
// it: the bench's `for` semantics are Prometheus's.
func TestPageFiresWhenPromtoolSaysItDoes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario and the real promtool")
	}
	bin := testtools.Path(t, "promtool")
	sc := Scenarios()[0] // the steady ramp: one page, late
	rep, err := Run(context.Background(), Options{Scenarios: []Scenario{sc}})
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Results[0]
	pages := res.score(DetectorKneewatchPage).Pages
	if len(pages) != 1 {
		t.Fatalf("the steady ramp paged %d times, want once", len(pages))
	}
	onset := pages[0].Sub(benchEpoch)

	groups, err := rules.Generate(rules.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	// Every recording rule (the page reads the sustained headroom they
	// record), then the page itself with only what decides its state:
	// annotations are templates promtool would make us repeat word for word.
	var ruleGroups []any
	var order []string
	var page rulefmt.Rule
	for _, g := range groups {
		var recs []any
		for _, r := range g.Rules {
			switch {
			case r.Record != "":
				recs = append(recs, map[string]any{"record": r.Record, "expr": r.Expr, "labels": r.Labels})
			case r.Alert == rules.AlertHeadroomExhausted:
				page = r
			}
		}
		if len(recs) > 0 {
			ruleGroups = append(ruleGroups, map[string]any{"name": g.Name, "rules": recs})
			order = append(order, g.Name)
		}
	}
	if page.Alert == "" {
		t.Fatalf("no %s among the generated rules", rules.AlertHeadroomExhausted)
	}
	ruleGroups = append(ruleGroups, map[string]any{"name": "page", "rules": []any{map[string]any{
		"alert": page.Alert, "expr": page.Expr, "for": page.For.String(), "keep_firing_for": page.KeepFiringFor.String(), "labels": page.Labels}}})
	order = append(order, "page")
	dir := t.TempDir()
	ruleFile := map[string]any{"groups": ruleGroups}
	labels := map[string]string{"instance": "kneewatch:9090", "job": "kneewatch", "model": res.Profile.Match.Model,
		"profile": res.Profile.Metadata.Name, "replica": replicaName}
	// The page keeps the replica's labels, not the scrape's job and instance.
	expLabels := map[string]string{"severity": page.Labels["severity"]}
	for _, k := range []string{"model", "profile", "replica"} {
		expLabels[k] = labels[k]
	}
	eval := rep.Options.EvalInterval
	inputs := []any{
		map[string]any{"series": "kneewatch_replica_headroom_ratio{" + promLabels(labels) + "}", "values": promValues(res.Inferred)},
		map[string]any{"series": "kneewatch_replica_requests_total{" + promLabels(labels) + "}", "values": promValues(res.RequestsExported)},
	}
	for d, vs := range res.KneeLoadExported {
		withDim := maps.Clone(labels)
		withDim["dimension"] = knee.Dimension(d).String()
		inputs = append(inputs, map[string]any{"series": "kneewatch_replica_knee_load_ratio{" + promLabels(withDim) + "}", "values": promValues(vs)})
	}
	test := map[string]any{
		"rule_files":          []string{"page.yaml"},
		"evaluation_interval": model.Duration(eval).String(),
		"group_eval_order":    order,
		"tests": []any{map[string]any{
			"interval":     model.Duration(rep.Options.ScrapeInterval).String(),
			"input_series": inputs,
			"alert_rule_test": []any{
				map[string]any{"eval_time": model.Duration(onset - eval).String(), "alertname": page.Alert, "exp_alerts": []any{}},
				map[string]any{"eval_time": model.Duration(onset).String(), "alertname": page.Alert,
					"exp_alerts": []any{map[string]any{"exp_labels": expLabels}}},
			},
		}},
	}
	if out, err := promtoolTestRules(dir, bin, "page_test.yaml", map[string]any{"page.yaml": ruleFile, "page_test.yaml": test}); err != nil {
		t.Fatalf("promtool disagrees with the bench's page at %s (%v):\n%s", clock(pages[0]), err, out)
	}
}

func promLabels(ls map[string]string) string {
	var parts []string
	for _, k := range []string{"instance", "job", "model", "profile", "replica"} {
		parts = append(parts, k+"="+strconv.Quote(ls[k]))
	}
	return strings.Join(parts, ",")
}

// promValues writes scraped values in promtool's series notation, one per
// scrape from time 0: nothing at 0 (the first scrape is one interval in),
// "stale" where kneewatch stopped exporting a headroom it had exported, and
// "_" where there was none.
func promValues(vs []float64) string {
	out := []string{"_"}
	had := false
	for _, v := range vs {
		switch {
		case knee.Known(v):
			out = append(out, strconv.FormatFloat(v, 'g', -1, 64))
			had = true
		case had:
			out = append(out, "stale")
			had = false
		default:
			out = append(out, "_")
		}
	}
	return strings.Join(out, " ")
}

// TestAlertTrackerKeepsFiringAsPromtoolDoes feeds one series into the real
// promtool and into the bench's alert tracker under a rule with both `for`
// and keep_firing_for, and checks that they agree at every evaluation: the
// alert fires after its hold, stays firing through a gap shorter than
// keep_firing_for (the same page, not a second one), resolves once the gap
// outlasts it, and a later return is pending again from scratch.
func TestAlertTrackerKeepsFiringAsPromtoolDoes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real promtool")
	}
	bin := testtools.Path(t, "promtool")
	const step = 15 * time.Second
	hold, keep := 30*time.Second, 2*time.Minute
	// −1 is past the threshold: firing from 6, a gap of 4 evaluations at
	// 10–13, back at 14–16, then a gap long enough to resolve, and a return.
	var vals []float64
	for i := range 42 {
		v := 1.0
		if (i >= 4 && i <= 9) || (i >= 14 && i <= 16) || (i >= 31 && i <= 35) {
			v = -1
		}
		vals = append(vals, v)
	}
	series := labels.FromStrings("__name__", "x", "replica", "a")
	tr := newAlertTracker("A", hold, keep, labels.EmptyLabels())
	firingAt := make([]bool, len(vals))
	for i, v := range vals {
		var vec promql.Vector
		if v < 0 {
			vec = promql.Vector{{Metric: series, F: v}}
		}
		tr.eval(benchEpoch.Add(time.Duration(i)*step), vec)
		n := len(tr.firings)
		firingAt[i] = n > 0 && tr.firings[n-1].End.IsZero()
	}
	if len(tr.firings) != 2 {
		t.Fatalf("the tracker fired %d times, want twice (the short gap keeps the first firing): %v", len(tr.firings), tr.firings)
	}
	var checks []any
	for i, firing := range firingAt {
		exp := []any{}
		if firing {
			exp = append(exp, map[string]any{"exp_labels": map[string]string{"replica": "a"}})
		}
		checks = append(checks, map[string]any{"eval_time": model.Duration(time.Duration(i) * step).String(), "alertname": "A", "exp_alerts": exp})
	}
	var notation []string
	for _, v := range vals {
		notation = append(notation, strconv.FormatFloat(v, 'g', -1, 64))
	}
	docs := map[string]any{
		"rule.yaml": map[string]any{"groups": []any{map[string]any{"name": "g", "rules": []any{map[string]any{
			"alert": "A", "expr": "x < 0", "for": model.Duration(hold).String(), "keep_firing_for": model.Duration(keep).String()}}}}},
		"rule_test.yaml": map[string]any{
			"rule_files":          []string{"rule.yaml"},
			"evaluation_interval": model.Duration(step).String(),
			"tests": []any{map[string]any{
				"interval":        model.Duration(step).String(),
				"input_series":    []any{map[string]any{"series": `x{replica="a"}`, "values": strings.Join(notation, " ")}},
				"alert_rule_test": checks,
			}},
		},
	}
	if out, err := promtoolTestRules(t.TempDir(), bin, "rule_test.yaml", docs); err != nil {
		t.Fatalf("promtool disagrees with the tracker's keep_firing_for (%v):\n%s", err, out)
	}
}

// promtoolTestRules writes each document as YAML into dir under its name
// and runs `promtool test rules` on the test file there, returning its
// output when it fails.
func promtoolTestRules(dir, bin, testFile string, docs map[string]any) ([]byte, error) {
	for name, doc := range docs {
		b, err := yaml.Marshal(doc)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "test", "rules", testFile)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}
