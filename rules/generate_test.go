package rules

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/pql"
)

func TestCheckRejectsExpressionsThatNameUnknownSeries(t *testing.T) {
	g, err := newGenerator(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	precedence := &parser.BinaryExpr{ // (a + b) * 2 built without the parentheses
		Op:  parser.MUL,
		LHS: &parser.BinaryExpr{Op: parser.ADD, LHS: pql.Selector("kneewatch_replica_running_requests"), RHS: pql.Selector("kneewatch_replica_waiting_requests")},
		RHS: pql.Num(2),
	}
	tests := []struct {
		name string
		expr parser.Expr
		want string // "" means accepted
	}{
		{"a catalog metric matched on its own labels is accepted",
			g.kw(catalog.MetricReplicaEvalOK, pql.Equal("reason", "no_profile")), ""},
		{"a catalog metric matched on a target label is accepted",
			pql.Selector("kneewatch_replica_headroom_ratio", pql.Equal("instance", "kw:9847")), ""},
		{"a kneewatch metric missing from the catalog is rejected",
			pql.Selector("kneewatch_replica_happiness_ratio"), "reads kneewatch_replica_happiness_ratio, which is not in the catalog"},
		{"a catalog metric matched on a label it does not have is rejected",
			pql.Selector("kneewatch_target_up", pql.Equal("model", "llama")), `matches label "model" of kneewatch_target_up, which has only replica, namespace, pod, source`},
		{"a raw series the options do not name is rejected",
			pql.Selector("sglang:num_running_reqs"), `reads "sglang:num_running_reqs", which is neither a kneewatch metric nor a series the options name`},
		{"the ruler's raw vLLM series are accepted",
			pql.Selector("vllm:num_requests_running"), ""},
		{"an operation built without its parentheses is rejected",
			precedence, "prints differently once parsed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := g.check(tc.expr, pretty(tc.expr))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("check() = %v, want it accepted", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("check() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// parsedRules parses every rule's expression of groups.
func parsedRules(t *testing.T, groups []Group) map[string]parser.Expr {
	t.Helper()
	p := parser.NewParser(parser.Options{})
	out := map[string]parser.Expr{}
	for _, g := range groups {
		for _, r := range g.Rules {
			e, err := p.ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("%s%s: %v", r.Record, r.Alert, err)
			}
			out[r.Record+r.Alert] = e
		}
	}
	return out
}

func TestOptionsShapeTheGeneratedRules(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Options)
		check  func(t *testing.T, groups []Group)
	}{
		{"extra labels and severities land on every alert", func(o *Options) {
			o.ExtraLabels = map[string]string{"team": "llm-serving"}
			o.PageSeverity, o.TicketSeverity = "page", "ticket"
		}, func(t *testing.T, groups []Group) {
			for _, g := range groups {
				for _, r := range g.Rules {
					if r.Alert == "" {
						continue
					}
					if r.Labels["team"] != "llm-serving" || (r.Labels["severity"] != "page" && r.Labels["severity"] != "ticket") {
						t.Errorf("%s has labels %v", r.Alert, r.Labels)
					}
				}
			}
		}},
		{"the selector restricts every kneewatch series", func(o *Options) {
			o.Selector = `{job="kneewatch-prod"}`
		}, func(t *testing.T, groups []Group) {
			for name, e := range parsedRules(t, groups) {
				for _, vs := range selectors(e) {
					if !strings.HasPrefix(vs.Name, "kneewatch_") {
						continue
					}
					if !slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool { return m.Name == "job" && m.Value == "kneewatch-prod" }) {
						t.Errorf("%s reads %s without the selector", name, vs)
					}
				}
			}
		}},
		{"routing and group-by labels are kept by every aggregation and join", func(o *Options) {
			o.GroupBy = []string{"region"}
		}, func(t *testing.T, groups []Group) {
			for name, e := range parsedRules(t, groups) {
				parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
					switch n := n.(type) {
					case *parser.AggregateExpr:
						for _, l := range []string{"region", "cluster", "namespace"} {
							// The ruler sums raw engine series by replica and GroupBy
							// only (their namespace is the engine scrape's, which a
							// static target may not set); its headroom takes the
							// identity from kneewatch's side (group_right).
							if rulerRule(name) && l != "region" {
								continue
							}
							if !slices.Contains(n.Grouping, l) {
								t.Errorf("%s: %s drops %s", name, n.ShortString(), l)
							}
						}
						// A per-replica aggregation keeps the served pod too (a
						// model's aggregation drops replica and pod together).
						if !rulerRule(name) && slices.Contains(n.Grouping, "replica") && !slices.Contains(n.Grouping, "pod") {
							t.Errorf("%s: %s keeps replica but drops pod", name, n.ShortString())
						}
					case *parser.BinaryExpr:
						vm := n.VectorMatching
						if vm == nil || !vm.On {
							break
						}
						if !slices.Contains(vm.MatchingLabels, "region") {
							t.Errorf("%s: %s joins without region", name, n.ShortString())
						}
						if rulerRule(name) {
							break
						}
						for _, l := range []string{"namespace", "cluster", "pod"} {
							if l == "pod" && !slices.Contains(vm.MatchingLabels, "replica") {
								continue
							}
							if !slices.Contains(vm.MatchingLabels, l) {
								t.Errorf("%s: %s joins on %v, without %s", name, n.ShortString(), vm.MatchingLabels, l)
							}
						}
						if slices.Contains(vm.MatchingLabels, "instance") {
							t.Errorf("%s: %s joins on kneewatch's instance, which differs between shards and HA pairs", name, n.ShortString())
						}
					}
					return nil
				})
			}
		}},
		{"the interval applies to every group", func(o *Options) {
			o.Interval = 30 * time.Second
		}, func(t *testing.T, groups []Group) {
			for _, g := range groups {
				if time.Duration(g.Interval) != 30*time.Second {
					t.Errorf("group %s has interval %s", g.Name, g.Interval)
				}
			}
		}},
		{"no dashboard base URL makes every dashboard link relative to Grafana's root", func(o *Options) {
			o.DashboardBaseURL = ""
		}, func(t *testing.T, groups []Group) {
			for _, g := range groups {
				for _, r := range g.Rules {
					if u := r.Annotations["dashboard_url"]; r.Alert != "" && !strings.HasPrefix(u, "/d/kneewatch-") {
						t.Errorf("%s links %q, want a link starting /d/kneewatch-", r.Alert, u)
					}
				}
			}
		}},
		{"a disabled ruler drops the ruler group", func(o *Options) {
			o.Ruler.Enabled = false
		}, func(t *testing.T, groups []Group) {
			for _, g := range groups {
				if g.Name == "kneewatch-ruler" {
					t.Error("the ruler group is still there")
				}
			}
		}},
		{"thresholds and durations reach the alert expressions", func(o *Options) {
			o.HeadroomLow.Below, o.HeadroomLow.For = 0.3, 20*time.Minute
		}, func(t *testing.T, groups []Group) {
			for _, r := range groups[len(groups)-1].Rules {
				if r.Alert == AlertHeadroomLow {
					if diff := cmp.Diff("kneewatch_replica_headroom_ratio < 0.3 for 20m", r.Expr+" for "+r.For.String()); diff != "" {
						t.Error(diff)
					}
					return
				}
			}
			t.Error("no headroom-low alert")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.modify(&o)
			groups, err := Generate(o)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, groups)
		})
	}
}

// TestRulerJoinsOnAConfiguredLabel runs the ruler group with the replica
// named by the engine series' pod label, under real promtool.
func TestRulerJoinsOnAConfiguredLabel(t *testing.T) {
	o := DefaultOptions()
	o.Ruler.JoinLabel = "pod"
	o.Ruler.Selector = `{job="vllm"}`
	o.Ruler.Window = 30 * time.Second
	var out bytes.Buffer
	if err := Render(&out, o, FormatRules); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	test := `rule_files: [rules.yaml]
evaluation_interval: 15s
tests:
  - interval: 15s
    input_series:
      - series: 'vllm:num_requests_running{job="vllm",pod="vllm-0",model_name="llama"}'
        values: '10+2x20'
      - series: 'vllm:num_requests_waiting{job="vllm",pod="vllm-0",model_name="llama"}'
        values: '4x20'
      # Another job's series with the same pod are not read.
      - series: 'vllm:num_requests_running{job="other",pod="vllm-0",model_name="llama"}'
        values: '1000x20'
      - series: 'kneewatch_knee_concurrency{job="kneewatch",instance="kw:9847",replica="vllm-0",model="llama",profile="p"}'
        values: '50x20'
    promql_expr_test:
      # Running samples in (4m30s, 5m] are 48 and 50: mean 49, plus 4 waiting.
      - expr: kneewatch:replica_inflight_requests:avg30s
        eval_time: 5m
        exp_samples:
          - labels: 'kneewatch:replica_inflight_requests:avg30s{replica="vllm-0"}'
            value: 53
      - expr: round(kneewatch:replica_headroom_ratio:avg30s, 0.001)
        eval_time: 5m
        exp_samples:
          - labels: '{replica="vllm-0",model="llama",profile="p"}'
            value: -0.06
`
	if err := os.WriteFile(filepath.Join(dir, "ruler.test.yaml"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	promtool(t, dir, "test", "rules", "ruler.test.yaml")
}

// rulerRule reports whether the rule named name is in the ruler group.
func rulerRule(name string) bool {
	o := DefaultOptions()
	return slices.Contains([]string{o.rulerInflightRecord(), o.rulerKVRecord(), o.rulerKneeRatioRecord(), o.rulerHeadroomRecord()}, name)
}
