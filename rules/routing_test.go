package rules

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// The routing labels the variants below give every kneewatch series that
// does not already carry them: the served replica's namespace and pod, and
// the cluster (kneewatch's global.external_labels).
const (
	routeNamespace = "team-x"
	routeCluster   = "c1"
)

// alertScenario is the part of an alert's promtool unit test this test
// replays: the input series and, per evaluation time, the alerts expected
// to fire (labels only).
type alertScenario struct {
	RuleFiles      []string `yaml:"rule_files"`
	EvalInterval   string   `yaml:"evaluation_interval"`
	GroupEvalOrder []string `yaml:"group_eval_order"`
	Tests          []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Input    []struct {
			Series string `yaml:"series"`
			Values string `yaml:"values"`
		} `yaml:"input_series"`
		AlertTests []struct {
			EvalTime  string `yaml:"eval_time"`
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `yaml:"exp_labels"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// deployment rewrites a scenario's kneewatch series and expected alert
// labels as they are when kneewatch runs a given way.
type deployment struct {
	name string
	// series returns the label sets of the kneewatch series that replace
	// one series of the scenario.
	series func(l labels.Labels) []labels.Labels
	// alerts returns the label sets of the alerts that replace one
	// expected alert of the scenario.
	alerts func(l map[string]string) []map[string]string
}

// withRoute adds the routing labels a served replica's series carry to a
// kneewatch series (or an expected alert about one) that lacks them.
func withRoute(get func(string) string, set func(string, string)) {
	if get("replica") == "" && get("model") == "" {
		return // not about a replica or a model: KneewatchAbsent's up
	}
	if get("namespace") == "" {
		set("namespace", routeNamespace)
	}
	if get("cluster") == "" {
		set("cluster", routeCluster)
	}
	if r := get("replica"); r != "" && get("pod") == "" {
		set("pod", r+"-pod")
	}
}

func routedSeries(l labels.Labels) labels.Labels {
	if !strings.HasPrefix(l.Get(labels.MetricName), "kneewatch_") {
		return l
	}
	b := labels.NewBuilder(l)
	withRoute(l.Get, func(k, v string) { b.Set(k, v) })
	return b.Labels()
}

func routedAlert(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	withRoute(func(k string) string { return out[k] }, func(k, v string) { out[k] = v })
	return out
}

// deployments are the ways several kneewatch instances export a replica:
// one instance; an HA pair exporting every replica twice (the instance
// label differs); shards, each replica exported by its own instance.
var deployments = []deployment{
	{
		name:   "one instance",
		series: func(l labels.Labels) []labels.Labels { return []labels.Labels{routedSeries(l)} },
		alerts: func(m map[string]string) []map[string]string { return []map[string]string{routedAlert(m)} },
	},
	{
		name: "an HA pair",
		series: func(l labels.Labels) []labels.Labels {
			l = routedSeries(l)
			if !strings.HasPrefix(l.Get(labels.MetricName), "kneewatch_") {
				return []labels.Labels{l}
			}
			return []labels.Labels{l, labels.NewBuilder(l).Set("instance", "ha-"+l.Get("instance")).Labels()}
		},
		alerts: func(m map[string]string) []map[string]string {
			m = routedAlert(m)
			if m["instance"] == "" {
				return []map[string]string{m} // read through a record that counts each replica once
			}
			twin := routedAlert(m)
			twin["instance"] = "ha-" + m["instance"]
			return []map[string]string{m, twin}
		},
	},
	{
		name: "one shard per replica",
		series: func(l labels.Labels) []labels.Labels {
			l = routedSeries(l)
			if r := l.Get("replica"); r != "" && strings.HasPrefix(l.Get(labels.MetricName), "kneewatch_") {
				l = labels.NewBuilder(l).Set("instance", "kneewatch-"+r+":9847").Labels()
			}
			return []labels.Labels{l}
		},
		alerts: func(m map[string]string) []map[string]string {
			m = routedAlert(m)
			if r := m["replica"]; r != "" && m["instance"] != "" {
				m["instance"] = "kneewatch-" + r + ":9847"
			}
			return []map[string]string{m}
		},
	},
}

// seriesString writes l in promtool's input series notation.
func seriesString(l labels.Labels) string {
	var parts []string
	l.Range(func(x labels.Label) {
		if x.Name != labels.MetricName {
			parts = append(parts, fmt.Sprintf("%s=%q", x.Name, x.Value))
		}
	})
	return l.Get(labels.MetricName) + "{" + strings.Join(parts, ",") + "}"
}

// alertsSeries writes an expected alert as the ALERTS series Prometheus
// stores for it while it fires.
func alertsSeries(alertname string, m map[string]string) string {
	b := labels.NewBuilder(labels.EmptyLabels())
	for k, v := range m {
		b.Set(k, v)
	}
	b.Set("alertname", alertname).Set("alertstate", "firing")
	var parts []string
	b.Labels().Range(func(x labels.Label) { parts = append(parts, fmt.Sprintf("%s=%q", x.Name, x.Value)) })
	return "ALERTS{" + strings.Join(parts, ",") + "}"
}

// TestEveryAlertRoutesByTheServedReplicaWithSeveralKneewatchInstances
// replays every alert's promtool unit test (firing cases and near misses)
// with the served replica's namespace, pod and cluster on every kneewatch
// series, once per deployment: one instance, an HA pair exporting every
// replica twice, and one shard per replica. Each expected alert must fire
// (as ALERTS, read back from real promtool's rule evaluation) carrying
// namespace, pod and cluster, exactly once per exporting instance where it
// reads kneewatch's series directly and exactly once where it reads a
// record that counts each replica once; every near miss stays quiet.
func TestEveryAlertRoutesByTheServedReplicaWithSeveralKneewatchInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("runs promtool over every alert's scenarios three times")
	}
	golden, err := filepath.Abs(filepath.Join("testdata", "rules.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "alerts", "*.test.yaml"))
	if err != nil || len(files) != len(Alerts()) {
		t.Fatalf("%d alert unit tests for %d alerts: %v", len(files), len(Alerts()), err)
	}
	p := parser.NewParser(parser.Options{})
	dir := t.TempDir()
	var written []string
	firing, quiet := 0, 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var sc alertScenario
		if err := yaml.Unmarshal(b, &sc); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, d := range deployments {
			type promqlTest struct {
				Expr       string           `yaml:"expr"`
				EvalTime   string           `yaml:"eval_time"`
				ExpSamples []map[string]any `yaml:"exp_samples"`
			}
			type series struct {
				Series string `yaml:"series"`
				Values string `yaml:"values"`
			}
			type group struct {
				Name     string       `yaml:"name"`
				Interval string       `yaml:"interval"`
				Input    []series     `yaml:"input_series"`
				Promql   []promqlTest `yaml:"promql_expr_test"`
			}
			out := struct {
				RuleFiles      []string `yaml:"rule_files"`
				EvalInterval   string   `yaml:"evaluation_interval,omitempty"`
				GroupEvalOrder []string `yaml:"group_eval_order,omitempty"`
				Tests          []group  `yaml:"tests"`
			}{RuleFiles: []string{golden}, EvalInterval: sc.EvalInterval, GroupEvalOrder: sc.GroupEvalOrder}
			for _, tg := range sc.Tests {
				g := group{Name: d.name + ": " + tg.Name, Interval: tg.Interval}
				for _, in := range tg.Input {
					l, err := p.ParseMetric(in.Series)
					if err != nil {
						t.Fatalf("%s: series %s: %v", file, in.Series, err)
					}
					for _, nl := range d.series(l) {
						g.Input = append(g.Input, series{seriesString(nl), in.Values})
					}
				}
				for _, at := range tg.AlertTests {
					pt := promqlTest{
						Expr:       fmt.Sprintf(`ALERTS{alertname=%q,alertstate="firing"}`, at.Alertname),
						EvalTime:   at.EvalTime,
						ExpSamples: []map[string]any{},
					}
					for _, ea := range at.ExpAlerts {
						for _, m := range d.alerts(ea.ExpLabels) {
							if m["replica"] != "" || m["model"] != "" {
								for _, k := range []string{"namespace", "cluster"} {
									if m[k] == "" {
										t.Fatalf("%s: expected alert %v has no %s", file, m, k)
									}
								}
							}
							pt.ExpSamples = append(pt.ExpSamples, map[string]any{"labels": alertsSeries(at.Alertname, m), "value": 1})
						}
					}
					if len(pt.ExpSamples) == 0 {
						quiet++
					} else {
						firing++
					}
					g.Promql = append(g.Promql, pt)
				}
				out.Tests = append(out.Tests, g)
			}
			content, err := yaml.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimSuffix(filepath.Base(file), ".test.yaml") + "." + strings.ReplaceAll(d.name, " ", "-") + ".test.yaml"
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			written = append(written, path)
		}
	}
	slices.Sort(written)
	got := promtool(t, dir, append([]string{"test", "rules"}, written...)...)
	if n := strings.Count(got, "SUCCESS"); n != len(written) {
		t.Errorf("promtool reported %d successes for %d files:\n%s", n, len(written), got)
	}
	t.Logf("%d alert scenario files × %d deployments: %d checks where alerts fire with namespace, pod and cluster, %d near misses quiet",
		len(files), len(deployments), firing, quiet)
}
