package detection

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
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

	page, err := shippedPage()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ruleFile := map[string]any{"groups": []any{map[string]any{
		"name": "page",
		// Only what decides the alert's state: annotations are templates
		// promtool would make us repeat word for word.
		"rules": []any{map[string]any{"alert": page.Alert, "expr": page.Expr, "for": page.For.String(), "labels": page.Labels}},
	}}}
	labels := map[string]string{"instance": "kneewatch:9090", "job": "kneewatch", "model": res.Profile.Match.Model,
		"profile": res.Profile.Metadata.Name, "replica": replicaName}
	series := `kneewatch_replica_headroom_ratio{` + promLabels(labels) + `}`
	expLabels := map[string]string{"severity": page.Labels["severity"]}
	for k, v := range labels {
		expLabels[k] = v
	}
	eval := rep.Options.EvalInterval
	test := map[string]any{
		"rule_files":          []string{"page.yaml"},
		"evaluation_interval": model.Duration(eval).String(),
		"tests": []any{map[string]any{
			"interval":     model.Duration(rep.Options.ScrapeInterval).String(),
			"input_series": []any{map[string]any{"series": series, "values": promValues(res.Inferred)}},
			"alert_rule_test": []any{
				map[string]any{"eval_time": model.Duration(onset - eval).String(), "alertname": page.Alert, "exp_alerts": []any{}},
				map[string]any{"eval_time": model.Duration(onset).String(), "alertname": page.Alert,
					"exp_alerts": []any{map[string]any{"exp_labels": expLabels}}},
			},
		}},
	}
	for name, doc := range map[string]any{"page.yaml": ruleFile, "page_test.yaml": test} {
		b, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "test", "rules", "page_test.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool disagrees with the bench's page at %s (%v):\n%s", clock(pages[0]), err, out)
	}
}

// shippedPage is kneewatch's generated page rule.
func shippedPage() (rulefmt.Rule, error) {
	groups, err := rules.Generate(rules.DefaultOptions())
	if err != nil {
		return rulefmt.Rule{}, err
	}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == rules.AlertHeadroomExhausted {
				return r, nil
			}
		}
	}
	return rulefmt.Rule{}, fmt.Errorf("no %s among the generated rules", rules.AlertHeadroomExhausted)
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
