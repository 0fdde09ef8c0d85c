package watch

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/internal/testtools"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/rules"
)

// lightVLLM serves what a vLLM replica held at a fixed in-flight load
// exposes, with vLLM's default TTFT and TPOT buckets: every request's TTFT
// uniform in [ttftLo, ttftHi] and its TPOT normal around tpotMean.
type lightVLLM struct {
	rng                     *rand.Rand
	inflight                float64
	ttftLo, ttftHi          float64
	tpotMean                float64
	outTokens, promptTokens float64
	requests, prompt, gen   float64
	ttft, tpot              []float64 // observations
}

func (v *lightVLLM) serve(seconds float64) {
	// Little's law: in-flight ÷ time in the system.
	e2e := (v.ttftLo+v.ttftHi)/2 + v.tpotMean*(v.outTokens-1)
	n := int(math.Round(v.inflight / e2e * seconds))
	for range n {
		v.requests++
		v.prompt += v.promptTokens
		v.gen += v.outTokens
		v.ttft = append(v.ttft, v.ttftLo+(v.ttftHi-v.ttftLo)*v.rng.Float64())
		v.tpot = append(v.tpot, max(0.0101, v.tpotMean+0.0003*v.rng.NormFloat64()))
	}
}

// exposition is the replica's /metrics text in vLLM V1's names.
func (v *lightVLLM) exposition() string {
	var b strings.Builder
	m := `model_name="llama"`
	fmt.Fprintf(&b, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{%s} %g\n", m, v.inflight)
	fmt.Fprintf(&b, "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{%s} 0\n", m)
	fmt.Fprintf(&b, "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{%s} 0.05\n", m)
	fmt.Fprintf(&b, "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{%s} %g\n", m, v.prompt)
	fmt.Fprintf(&b, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{%s} %g\n", m, v.gen)
	fmt.Fprintf(&b, "# TYPE vllm:request_success_total counter\nvllm:request_success_total{finished_reason=\"length\",%s} %g\n", m, v.requests)
	hist := func(name string, edges, obs []float64) {
		fmt.Fprintf(&b, "# TYPE %s histogram\n", name)
		sum := 0.0
		for _, o := range obs {
			sum += o
		}
		for _, e := range edges {
			n := 0
			for _, o := range obs {
				if o <= e {
					n++
				}
			}
			fmt.Fprintf(&b, "%s_bucket{%s,le=\"%g\"} %d\n", name, m, e, n)
		}
		fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %d\n%s_sum{%s} %g\n%s_count{%s} %d\n", name, m, len(obs), name, m, sum, name, m, len(obs))
	}
	ttftEdges, tpotEdges, _ := collector.DefaultLatencyBuckets("vllm")
	hist("vllm:time_to_first_token_seconds", ttftEdges, v.ttft)
	hist("vllm:request_time_per_output_token_seconds", tpotEdges, v.tpot)
	return b.String()
}

// lightProfile has its knee at 25 in flight, with the SLO of issue 14:
// thresholds inside vLLM's (0.1, 0.25] TTFT and (0.01, 0.025] TPOT buckets.
func lightProfile() *knee.Profile {
	pt := func(c, out float64, ok bool) knee.Point {
		return knee.Point{Concurrency: c, Requests: 500, RequestsPerSecond: out / 200, OutputTokensPerSecond: out,
			GoodputTokensPerSecond: out, TTFT: knee.Quantiles{P50: 0.04, P99: 0.06}, TPOT: knee.Quantiles{P50: 0.0105, P99: 0.012}, MeetsSLO: ok}
	}
	return &knee.Profile{
		APIVersion: knee.APIVersion, Kind: knee.Kind, Match: knee.Match{Model: "llama"},
		SLO:      knee.SLO{TTFT: knee.Duration(230 * time.Millisecond), TPOT: knee.Duration(23 * time.Millisecond), Quantile: 0.99},
		Workload: knee.WorkloadInfo{MeanPromptTokens: 300, MeanOutputTokens: 200},
		Points:   []knee.Point{pt(1, 95, true), pt(5, 470, true), pt(10, 900, true), pt(25, 2000, true), pt(40, 2400, false)},
		Knee:     knee.Knee{Concurrency: 25, OutputTokensPerSecond: 2000, GoodputTokensPerSecond: 2000, KVCacheUsage: 0.3, LimitingResource: knee.ResourceCompute},
	}
}

// TestLightLoadInsideVLLMBucketsRaisesNoSLOPage is issue 14's false page:
// a replica at 20% of its knee, every TPOT near 10.5 ms and TTFT 30–60 ms,
// judged against 230 ms and 23 ms, thresholds inside vLLM's buckets. It
// runs the replica's expositions through the vLLM adapter, the watcher and
// the exporter for 45 minutes of virtual time, then gives what a Prometheus
// would have scraped to the real promtool with the shipped rules: no SLO
// page may fire, and no exported attainment may fall below 1, the share the
// buckets support (every request is in a bucket whose edges are within the
// SLO or straddle it). The same counts, interpolated inside the bucket as
// before, fire the fast burn page: the test can fail.
func TestLightLoadInsideVLLMBucketsRaisesNoSLOPage(t *testing.T) {
	promtool := testtools.Path(t, "promtool")
	prof := lightProfile()
	replica := &lightVLLM{rng: rand.New(rand.NewPCG(14, 5)), inflight: 5, ttftLo: 0.03, ttftHi: 0.06, tpotMean: 0.0105,
		outTokens: 200, promptTokens: 300}
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := start
	w := NewWatcher(WatcherOptions{Interval: 15 * time.Second, Window: time.Minute, TargetHeadroom: 0.2, Now: func() time.Time { return clock }})
	if err := w.SetTargets([]Target{{Replica: "r0", Engine: "vllm", MetricsURL: "http://r0/metrics", ProfileName: "llama", Profile: prof}}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewExporter(w.Latest))

	const minutes = 45
	series := map[string][]string{} // promtool series → one value a minute
	var interpolatedGood []float64  // the old count of good TPOT requests, a minute apart
	for minute := 0; minute <= minutes; minute++ {
		for step := range 4 {
			clock = start.Add(time.Duration(minute)*time.Minute + time.Duration(step)*15*time.Second)
			replica.serve(15)
			snap := normalizeText(t, replica.exposition(), collector.Options{Engine: "vllm"})
			snap.Time = clock
			if _, err := w.Replay([]ReplayScrape{{Replica: "r0", Engine: snap}}); err != nil {
				t.Fatal(err)
			}
		}
		r := w.Latest().Replicas[0]
		if minute > 0 {
			if a := r.Observation.TPOTAttainment; a != 1 {
				t.Fatalf("minute %d: exported TPOT attainment %v, below 1, the share the buckets support", minute, a)
			}
			if a := r.Observation.TTFTAttainment; a != 1 {
				t.Fatalf("minute %d: exported TTFT attainment %v, below 1", minute, a)
			}
			if r.GoodTPOTRequests != r.RequestsTotal || r.GoodTTFTRequests != r.RequestsTotal {
				t.Fatalf("minute %d: good requests ttft %v tpot %v of %v", minute, r.GoodTTFTRequests, r.GoodTPOTRequests, r.RequestsTotal)
			}
			if h := r.Result.Headroom; math.Abs(h-0.8) > 0.05 {
				t.Fatalf("minute %d: headroom %v, want about 0.8 (20%% of the knee)", minute, h)
			}
		}
		interpolatedGood = append(interpolatedGood, r.RequestsTotal*(0.023-0.01)/(0.025-0.01))
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range flatten(families) {
			for len(series[name]) < minute {
				series[name] = append(series[name], "_")
			}
			series[name] = append(series[name], fmt.Sprintf("%g", v))
		}
	}
	last := w.Latest().Replicas[0]
	t.Logf("after %d min at %.0f in flight (knee 25): headroom %.3f, TPOT p99 exported %.4f s (every request 10.5±0.3 ms), TPOT attainment %v, TTFT attainment %v, %v requests, good tpot %v",
		minutes, replica.inflight, last.Result.Headroom, last.Observation.TPOT.P99, last.Observation.TPOTAttainment, last.Observation.TTFTAttainment,
		last.RequestsTotal, last.GoodTPOTRequests)

	dir := t.TempDir()
	var rb bytes.Buffer
	if err := rules.Render(&rb, rules.DefaultOptions(), rules.FormatRules); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	eval := fmt.Sprintf("%dm", minutes)
	quiet := func(alerts ...string) string {
		var s strings.Builder
		for _, a := range alerts {
			fmt.Fprintf(&s, "      - eval_time: %s\n        alertname: %s\n        exp_alerts: []\n", eval, a)
		}
		return s.String()
	}
	exported := promtoolSeries(series)
	// The control: the same requests, good TPOT counted by interpolation.
	var controlInput strings.Builder
	for name, values := range series {
		if strings.HasPrefix(name, "kneewatch_replica_slo_good_requests_total{") && strings.Contains(name, `slo="tpot"`) {
			values = formatAll(interpolatedGood[len(interpolatedGood)-len(values):])
		}
		controlInput.WriteString(promtoolSeries(map[string][]string{name: values}))
	}
	test := "rule_files: [rules.yaml]\nevaluation_interval: 1m\ntests:\n" +
		"  - name: a replica at 20% of its knee, thresholds inside vLLM's buckets, raises no SLO page\n    interval: 1m\n    input_series:\n" + exported +
		"    alert_rule_test:\n" + quiet(rules.AlertGoodputSLOBurnFast, rules.AlertGoodputSLOBurnSlow, rules.AlertPastKnee) +
		"  - name: the same requests counted by interpolation inside the bucket fire the fast burn page\n    interval: 1m\n    input_series:\n" +
		controlInput.String() +
		"    promql_expr_test:\n      - expr: count(ALERTS{alertname=\"" + rules.AlertGoodputSLOBurnFast + "\",alertstate=\"firing\",slo=\"tpot\"})\n" +
		"        eval_time: " + eval + "\n        exp_samples:\n          - labels: '{}'\n            value: 1\n"
	if err := os.WriteFile(filepath.Join(dir, "light.test.yaml"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, promtool, "test", "rules", "light.test.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

func formatAll(vs []float64) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprintf("%g", v)
	}
	return out
}

// promtoolSeries renders input_series entries, one value a minute.
func promtoolSeries(series map[string][]string) string {
	names := make([]string, 0, len(series))
	for n := range series {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "      - series: '%s'\n        values: '%s'\n", n, strings.Join(series[n], " "))
	}
	return b.String()
}

// flatten turns gathered families into series names (with job and
// instance, as Prometheus scrapes them) and values; a summary becomes its
// quantile, _sum and _count series.
func flatten(families []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	name := func(metric string, m *dto.Metric, extra ...string) string {
		labels := []string{`instance="kneewatch:9847"`, `job="kneewatch"`}
		for _, l := range m.GetLabel() {
			labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
		}
		labels = append(labels, extra...)
		slices.Sort(labels)
		return metric + "{" + strings.Join(labels, ",") + "}"
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_GAUGE:
				out[name(f.GetName(), m)] = m.GetGauge().GetValue()
			case dto.MetricType_COUNTER:
				out[name(f.GetName(), m)] = m.GetCounter().GetValue()
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					out[name(f.GetName(), m, fmt.Sprintf("quantile=%q", fmt.Sprint(q.GetQuantile())))] = q.GetValue()
				}
				out[name(f.GetName()+"_sum", m)] = s.GetSampleSum()
				out[name(f.GetName()+"_count", m)] = float64(s.GetSampleCount())
			}
		}
	}
	return out
}
