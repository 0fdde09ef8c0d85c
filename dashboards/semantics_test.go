package dashboards

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// A promtool unit-test file (`promtool test rules`) holding only PromQL
// expression tests: input series, an expression, the samples it must return.
type promtoolFile struct {
	RuleFiles          []string       `yaml:"rule_files"`
	EvaluationInterval string         `yaml:"evaluation_interval"`
	Tests              []promtoolTest `yaml:"tests"`
}

type promtoolTest struct {
	Name        string        `yaml:"name"`
	Interval    string        `yaml:"interval"`
	InputSeries []inputSeries `yaml:"input_series"`
	ExprTests   []exprTest    `yaml:"promql_expr_test"`
}

type inputSeries struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

type exprTest struct {
	Expr       string   `yaml:"expr"`
	EvalTime   string   `yaml:"eval_time"`
	ExpSamples []sample `yaml:"exp_samples"`
}

type sample struct {
	Labels string  `yaml:"labels"`
	Value  float64 `yaml:"value"`
}

// semanticVariables are what the on-call would have selected: the one
// cluster (no cluster label, so an empty value), kneewatch's job, every
// namespace and model, replica "a".
var semanticVariables = map[string]string{
	"__rate_interval": "5m",
	"__interval":      "1m",
	"__range":         "1h",
	"cluster":         "",
	"job":             "kneewatch",
	"namespace":       ".*",
	"model":           ".*",
	"replica":         "a",
	"pod":             "",
	"gpu":             ".*",
}

// statusAge is the last-evaluation card of a dashboard's status row.
func statusAge(uid string) card {
	first := map[string]uint32{FleetUID: 15, ReplicaUID: 22}[uid]
	_, age, _ := statusCards(first)
	return age
}

// panelQuery returns the substituted expression of one target of a panel.
func panelQuery(t *testing.T, uid string, c card, ref string) string {
	t.Helper()
	for _, d := range builtDashboards(t, DefaultOptions()) {
		if *d.Uid != uid {
			continue
		}
		for _, p := range panels(t, d) {
			if *p.Id != c.id {
				continue
			}
			for _, target := range p.Targets {
				if q := target.(prometheus.Dataquery); *q.RefId == ref {
					expr, err := substituteWith(q.Expr, semanticVariables)
					if err != nil {
						t.Fatal(err)
					}
					return expr
				}
			}
		}
	}
	t.Fatalf("%s has no panel %q with target %s", uid, c.title, ref)
	return ""
}

// The panels compute what their titles claim, checked by real promtool on
// series like kneewatch's: the fallbacks, joins and thresholds of the tricky
// queries are where a dashboard lies without any error.
func TestPanelQueriesComputeWhatThePanelsClaim(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real promtool")
	}
	promtool := testtools.Path(t, "promtool")
	evalAt := "390m"
	long := func(series, values string) inputSeries { return inputSeries{series, values} }

	tests := []promtoolTest{
		{
			Name: "probe success is 1 when every probe streams, 0 when every probe fails, and the share otherwise",
			InputSeries: []inputSeries{
				long(`kneewatch_probe_success_total{job="kneewatch",replica="a",model="m"}`, "0+60x400"),
				long(`kneewatch_probe_failures_total{job="kneewatch",replica="b",model="m",class="timeout"}`, "0+30x400"),
				long(`kneewatch_probe_success_total{job="kneewatch",replica="c",model="m"}`, "0+45x400"),
				long(`kneewatch_probe_failures_total{job="kneewatch",replica="c",model="m",class="http_5xx"}`, "0+15x400"),
			},
			ExprTests: []exprTest{{
				Expr: panelQuery(t, FleetUID, fleetProbes, "A"), EvalTime: evalAt,
				ExpSamples: []sample{{`{replica="a"}`, 1}, {`{replica="b"}`, 0}, {`{replica="c"}`, 0.75}},
			}},
		},
		{
			Name: "the threshold counts count replicas under each threshold, say 0 while kneewatch runs and nothing when it is gone",
			InputSeries: []inputSeries{
				// a and b are past the page's threshold (the knee), c under the warning's.
				long(`kneewatch_replica_headroom_ratio{job="kneewatch",replica="a",model="m",profile="p"}`, "-0.01x400"),
				long(`kneewatch_replica_headroom_ratio{job="kneewatch",replica="b",model="m",profile="p"}`, "-0.2x400"),
				long(`kneewatch_replica_headroom_ratio{job="kneewatch",replica="c",model="n",profile="p"}`, "0.15x400"),
				long(`kneewatch_replica_headroom_ratio{job="kneewatch",replica="d",model="n",profile="p"}`, "0.5x400"),
				// Another job's look-alike series are not counted.
				long(`kneewatch_replica_headroom_ratio{job="other",replica="e",model="m",profile="p"}`, "-0.5x400"),
				// kneewatch keeps running (and evaluating) after the
				// replicas' headroom series end, then stops at 500m.
				long(`kneewatch_last_evaluation_timestamp_seconds{job="kneewatch",instance="k:9090"}`, "0+60x500"),
			},
			ExprTests: []exprTest{
				{Expr: panelQuery(t, FleetUID, fleetPastPage, "A"), EvalTime: evalAt, ExpSamples: []sample{{`{}`, 2}}},
				{Expr: panelQuery(t, FleetUID, fleetBelowWarning, "A"), EvalTime: evalAt, ExpSamples: []sample{{`{}`, 3}}},
				{Expr: panelQuery(t, FleetUID, fleetLowestHeadroom, "A"), EvalTime: evalAt, ExpSamples: []sample{{`{}`, -0.2}}},
				{Expr: panelQuery(t, FleetUID, fleetPastPage, "A"), EvalTime: "450m", ExpSamples: []sample{{`{}`, 0}}},
				// Evaluated 30 s after the last round: 30 s old.
				{Expr: panelQuery(t, FleetUID, statusAge(FleetUID), "A"), EvalTime: "400m30s", ExpSamples: []sample{{`{}`, 30}}},
				// kneewatch stopped: every count is empty, so the panel shows
				// its noValue ("kneewatch down"), not a 0.
				{Expr: panelQuery(t, FleetUID, fleetPastPage, "A"), EvalTime: "520m", ExpSamples: []sample{}},
				{Expr: panelQuery(t, FleetUID, statusAge(FleetUID), "A"), EvalTime: "520m", ExpSamples: []sample{}},
			},
		},
		{
			Name: "replicas missing sums the whole replicas each model lacks and ignores a model with spare ones",
			InputSeries: []inputSeries{
				long(`kneewatch_fleet_replicas_needed{job="kneewatch",model="x"}`, "2.3x400"),
				long(`kneewatch_fleet_replicas{job="kneewatch",model="x"}`, "2x400"),
				long(`kneewatch_fleet_replicas_needed{job="kneewatch",model="y"}`, "1x400"),
				long(`kneewatch_fleet_replicas{job="kneewatch",model="y"}`, "3x400"),
			},
			ExprTests: []exprTest{{Expr: panelQuery(t, FleetUID, fleetMissing, "A"), EvalTime: evalAt, ExpSamples: []sample{{`{}`, 1}}}},
		},
		{
			Name: "attainment is the request-weighted share within each SLO and burn is its error ratio over the budget",
			InputSeries: []inputSeries{
				long(`kneewatch_replica_requests_total{job="kneewatch",replica="a",model="m",profile="p"}`, "0+60x400"),
				long(`kneewatch_replica_requests_total{job="kneewatch",replica="b",model="m",profile="p"}`, "0+60x400"),
				long(`kneewatch_replica_slo_good_requests_total{job="kneewatch",replica="a",model="m",profile="p",slo="ttft"}`, "0+57x400"),
				long(`kneewatch_replica_slo_good_requests_total{job="kneewatch",replica="b",model="m",profile="p",slo="ttft"}`, "0+60x400"),
				long(`kneewatch_replica_slo_good_requests_total{job="kneewatch",replica="a",model="m",profile="p",slo="tpot"}`, "0+60x400"),
				long(`kneewatch_replica_slo_good_requests_total{job="kneewatch",replica="b",model="m",profile="p",slo="tpot"}`, "0+60x400"),
			},
			ExprTests: []exprTest{
				{Expr: panelQuery(t, FleetUID, fleetAttainment, "A"), EvalTime: evalAt,
					ExpSamples: []sample{{`{model="m",slo="ttft"}`, 0.975}, {`{model="m",slo="tpot"}`, 1}}},
				// 1 - 0.99 is not exact in binary floating point: round the burn.
				{Expr: "round(" + panelQuery(t, FleetUID, fleetBurn, "A") + ", 0.001)", EvalTime: evalAt,
					ExpSamples: []sample{{`{model="m",slo="ttft"}`, 2.5}, {`{model="m",slo="tpot"}`, 0}}},
				{Expr: "round(" + panelQuery(t, FleetUID, fleetBurn, "B") + ", 0.001)", EvalTime: evalAt,
					ExpSamples: []sample{{`{model="m",slo="ttft"}`, 2.5}, {`{model="m",slo="tpot"}`, 0}}},
			},
		},
		{
			Name: "replicas not evaluated lists only replicas whose evaluation is not ok, with the reason",
			InputSeries: []inputSeries{
				long(`kneewatch_replica_evaluation_ok{job="kneewatch",replica="a",model="m",profile="p"}`, "1x400"),
				long(`kneewatch_replica_evaluation_ok{job="kneewatch",replica="b",model="m",reason="no_profile"}`, "0x400"),
				long(`kneewatch_target_up{job="kneewatch",replica="b",source="engine"}`, "1x400"),
				long(`kneewatch_target_up{job="kneewatch",replica="b",source="dcgm"}`, "0x400"),
			},
			ExprTests: []exprTest{
				{Expr: panelQuery(t, FleetUID, fleetNotEvaluated, "A"), EvalTime: evalAt,
					ExpSamples: []sample{{`{replica="b",model="m",reason="no_profile"}`, 0}}},
				{Expr: panelQuery(t, FleetUID, fleetTargetsDown, "A"), EvalTime: evalAt,
					ExpSamples: []sample{{`{replica="b",source="dcgm"}`, 0}}},
				// Replica "a" is ok: the reason query is empty, the ok one is 1.
				{Expr: panelQuery(t, ReplicaUID, replicaEvaluation, "A"), EvalTime: evalAt, ExpSamples: []sample{}},
				{Expr: panelQuery(t, ReplicaUID, replicaEvaluation, "B"), EvalTime: evalAt, ExpSamples: []sample{{`{}`, 1}}},
			},
		},
		{
			Name: "the replica panels read only the selected replica: prefill share, in-flight lines and its firing alerts",
			InputSeries: []inputSeries{
				long(`kneewatch_replica_prompt_tokens_per_second{job="kneewatch",replica="a",model="m",profile="p"}`, "300x400"),
				long(`kneewatch_replica_output_tokens_per_second{job="kneewatch",replica="a",model="m",profile="p"}`, "100x400"),
				long(`kneewatch_replica_prompt_tokens_per_second{job="kneewatch",replica="b",model="m",profile="p"}`, "0x400"),
				long(`kneewatch_replica_output_tokens_per_second{job="kneewatch",replica="b",model="m",profile="p"}`, "100x400"),
				long(`kneewatch_knee_concurrency{job="kneewatch",replica="a",model="m",profile="p"}`, "200x400"),
				long(`ALERTS{alertname="KneewatchHeadroomExhausted",alertstate="firing",severity="critical",replica="a"}`, "1x400"),
				long(`ALERTS{alertname="KneewatchHeadroomLow",alertstate="pending",severity="warning",replica="a"}`, "1x400"),
				long(`ALERTS{alertname="KneewatchHeadroomLow",alertstate="firing",severity="warning",replica="b"}`, "1x400"),
				long(`ALERTS{alertname="SomeoneElsesAlert",alertstate="firing",severity="critical",replica="a"}`, "1x400"),
			},
			ExprTests: []exprTest{
				{Expr: panelQuery(t, ReplicaUID, replicaPrefill, "A"), EvalTime: evalAt,
					ExpSamples: []sample{{`{job="kneewatch",replica="a",model="m",profile="p"}`, 0.75}}},
				{Expr: panelQuery(t, ReplicaUID, replicaInflight, "C"), EvalTime: evalAt,
					ExpSamples: []sample{{`{job="kneewatch",replica="a",model="m",profile="p"}`, 160}}},
				{Expr: panelQuery(t, ReplicaUID, replicaInflight, "D"), EvalTime: evalAt,
					ExpSamples: []sample{{`{job="kneewatch",replica="a",model="m",profile="p"}`, 200 * (1 - DefaultPageHeadroom)}}},
				{Expr: panelQuery(t, ReplicaUID, replicaAlerts, "A"), EvalTime: evalAt,
					ExpSamples: []sample{{`{alertname="KneewatchHeadroomExhausted",severity="critical"}`, 1}}},
			},
		},
		{
			Name: "the knee panel draws the curve of the replica's own profile once, however many kneewatch instances export it",
			InputSeries: []inputSeries{
				long(`kneewatch_knee_concurrency{job="kneewatch",instance="k0",replica="a",model="m",profile="p"}`, "100x400"),
				long(`kneewatch_knee_concurrency{job="kneewatch",instance="k1",replica="b",model="m",profile="q"}`, "50x400"),
				// Both instances export p's curve (each watches a replica on it).
				long(`kneewatch_profile_curve_output_tokens_per_second{job="kneewatch",instance="k0",profile="p",concurrency="8"}`, "800x400"),
				long(`kneewatch_profile_curve_output_tokens_per_second{job="kneewatch",instance="k1",profile="p",concurrency="8"}`, "800x400"),
				long(`kneewatch_profile_curve_output_tokens_per_second{job="kneewatch",instance="k0",profile="p",concurrency="64"}`, "5000x400"),
				long(`kneewatch_profile_curve_output_tokens_per_second{job="kneewatch",instance="k1",profile="q",concurrency="8"}`, "300x400"),
			},
			ExprTests: []exprTest{
				{Expr: panelQuery(t, ReplicaUID, replicaKnee, "A"), EvalTime: evalAt,
					ExpSamples: []sample{{`{concurrency="8"}`, 800}, {`{concurrency="64"}`, 5000}}},
				{Expr: panelQuery(t, ReplicaUID, replicaKnee, "D"), EvalTime: evalAt,
					ExpSamples: []sample{{`{replica="a"}`, 100}}},
			},
		},
	}
	for i := range tests {
		tests[i].Interval = "1m"
	}
	// At 450m the headroom series (400 one-minute samples) are stale, so the
	// threshold count there must fall back to 0 instead of vanishing.
	file := promtoolFile{RuleFiles: []string{}, EvaluationInterval: "1m", Tests: tests}
	data, err := yaml.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard_queries_test.yml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput()
	if err != nil {
		t.Errorf("promtool test rules: %v\n%s\ntest file:\n%s", err, out, data)
	}
}
