package watch

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/internal/testtools"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/probe"
)

// vllmTTFTBounds and vllmTPOTBounds are vLLM V1's bucket edges.
var (
	vllmTTFTBounds = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	vllmTPOTBounds = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
)

// histogramOf builds a cumulative histogram in which each observation value
// in obs was seen n times.
func histogramOf(bounds []float64, obs map[float64]float64) collector.Histogram {
	h := collector.Histogram{}
	for _, b := range append(append([]float64{}, bounds...), inf) {
		var c float64
		for v, n := range obs {
			if v <= b {
				c += n
			}
		}
		h.Buckets = append(h.Buckets, collector.Bucket{UpperBound: b, Count: c})
	}
	for v, n := range obs {
		h.Count += n
		h.Sum += v * n
	}
	return h
}

var inf = func() float64 { var z float64; return 1 / z }()

// replicaSnapshot is a vLLM replica after i intervals of steady load: 40 in
// flight, 2000 output and 1000 prompt tokens/s, 10 requests/s of which 90%
// have a 50 ms TTFT and 10% a 300 ms TTFT.
func replicaSnapshot(t0 time.Time, i int) collector.Snapshot {
	s := collector.NewSnapshot("vllm")
	s.Time = t0.Add(time.Duration(i) * 5 * time.Second)
	s.Model = "meta-llama/Llama-3.1-8B-Instruct"
	s.Gauges[collector.SignalRunning] = 36
	s.Gauges[collector.SignalWaiting] = 4
	s.Gauges[collector.SignalKVUsage] = 0.3
	n := float64(i) * 5
	s.Counters[collector.SignalGenerationTokens] = 2000 * n
	s.Counters[collector.SignalPromptTokens] = 1000 * n
	s.Counters[collector.SignalRequestsFinished] = 10 * n
	s.Counters[collector.SignalPreemptions] = 0
	s.Histograms[collector.SignalTTFT] = histogramOf(vllmTTFTBounds, map[float64]float64{0.05: 9 * n, 0.3: 1 * n})
	s.Histograms[collector.SignalTPOT] = histogramOf(vllmTPOTBounds, map[float64]float64{0.02: 10 * n})
	return s
}

func loadValidProfile(t testing.TB) *knee.Profile {
	t.Helper()
	p, err := knee.Load(filepath.Join(testtools.ModuleRoot(), "knee", "testdata", "valid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fixedRound feeds a fixed sequence of scrapes through a watcher: replica
// "ok" is healthy with a profile and a GPU, "noprofile" has none, and
// "down" serves metrics until its last scrape fails.
func fixedRound(t *testing.T) *Round {
	t.Helper()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	prof := loadValidProfile(t)
	const last = 14 // 70 s of scrapes: the 1 m window is full
	clock := t0.Add(last * 5 * time.Second)
	w := NewWatcher(WatcherOptions{Interval: 5 * time.Second, Window: time.Minute, TargetHeadroom: 0.2, Now: func() time.Time { return clock }})
	targets := []Target{
		// ok carries a served replica's identity and extra labels; the
		// others have none, so the golden shows both.
		{Replica: "ok", Namespace: "llm", Pod: "ok-0", Labels: map[string]string{"zone": "a", "team": "search"},
			ProfileName: "valid", Profile: prof, DCGM: &DCGMTarget{URL: "dcgm", Selectors: []collector.GPUSelector{{Pod: "ok", Namespace: "llm"}}}},
		{Replica: "noprofile", SLO: prof.SLO},
		{Replica: "down", ProfileName: "valid", Profile: prof},
	}
	if err := w.SetTargets(targets); err != nil {
		t.Fatal(err)
	}
	gpu := collector.DCGMSnapshot{GPUs: []collector.GPUSnapshot{{
		Labels: collector.GPULabels{GPU: "0", UUID: "GPU-1", Pod: "ok", Namespace: "llm"},
		Gauges: map[collector.Signal]float64{collector.SignalGPUUtilization: 0.93},
	}}}
	var evals []ReplicaEval
	for i := 0; i <= last; i++ {
		evals = evals[:0]
		for _, name := range []string{"down", "noprofile", "ok"} {
			out := scrapeOutcome{snap: replicaSnapshot(t0, i), duration: 12 * time.Millisecond}
			if name == "ok" {
				out.dcgm = &dcgmResult{snap: gpu, duration: 3 * time.Millisecond}
			}
			if name == "down" && i == last {
				out = scrapeOutcome{err: errors.New("connection refused"), duration: time.Millisecond}
			}
			evals = append(evals, w.assess(w.targets[name], out))
		}
	}
	return w.publish(evals)
}

func exposition(t *testing.T, r *Round) []byte {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewExporter(func() *Round { return r }))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestExpositionOfAFixedSequenceMatchesTheGoldenFile(t *testing.T) {
	got := exposition(t, fixedRound(t))
	golden := filepath.Join("testdata", "golden", "exposition.prom")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("exposition differs from %s (run with -update if intended):\n%s", golden, got)
	}
}

func TestGoldenExpositionPassesPromtoolCheckMetrics(t *testing.T) {
	promtool := testtools.Path(t, "promtool")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(exposition(t, fixedRound(t)))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// sample returns the value of the series with exactly these labels.
func sample(t *testing.T, text []byte, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	fams, err := collector.ParseText(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	mf, ok := fams[name]
	if !ok {
		return 0, false
	}
	// As in Prometheus, an empty label is no label: the series matches
	// when its non-empty labels are exactly labels' non-empty ones.
	nonEmpty := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if v != "" {
				out[k] = v
			}
		}
		return out
	}
	want := nonEmpty(labels)
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if maps.Equal(nonEmpty(got), want) {
			// One of the three is set, the others read 0.
			return m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

func TestExportedValuesFollowTheEvaluation(t *testing.T) {
	text := exposition(t, fixedRound(t))
	const model = "meta-llama/Llama-3.1-8B-Instruct"
	with := func(base map[string]string, k, v string) map[string]string {
		m := map[string]string{k: v}
		for a, b := range base {
			m[a] = b
		}
		return m
	}
	id := map[string]string{"replica": "ok", "namespace": "llm", "pod": "ok-0", "team": "search", "zone": "a"}
	ok := with(id, "model", model)
	ok["profile"] = "valid"
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"kneewatch_target_up", map[string]string{"replica": "down", "source": "engine"}, 0},
		{"kneewatch_target_up", with(id, "source", "engine"), 1},
		{"kneewatch_target_up", with(id, "source", "dcgm"), 1},
		{"kneewatch_replica_evaluation_ok", map[string]string{"replica": "down", "model": model, "profile": "valid", "reason": "engine_down"}, 0},
		{"kneewatch_replica_evaluation_ok", map[string]string{"replica": "noprofile", "model": model, "profile": "", "reason": "no_profile"}, 0},
		{"kneewatch_replica_evaluation_ok", with(ok, "reason", ""), 1},
		{"kneewatch_replica_inflight_requests", ok, 40},
		{"kneewatch_replica_output_tokens_per_second", ok, 2000},
		{"kneewatch_replica_prompt_tokens_per_second", ok, 1000},
		{"kneewatch_replica_gpu_utilization_ratio", ok, 0.93},
		{"kneewatch_replica_knee_load_ratio", with(ok, "dimension", "load"), 40.0 / 112},
		{"kneewatch_knee_concurrency", map[string]string{"replica": "down", "model": model, "profile": "valid"}, 112},
	} {
		got, found := sample(t, text, c.name, c.labels)
		if !found {
			t.Errorf("%s%v is missing", c.name, c.labels)
			continue
		}
		if math.Abs(got-c.want) > 1e-9*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for _, absent := range []map[string]string{
		{"replica": "down", "model": model, "profile": "valid"},
		{"replica": "noprofile", "model": model, "profile": ""},
	} {
		if _, found := sample(t, text, "kneewatch_replica_headroom_ratio", absent); found {
			t.Errorf("headroom exported for %v, whose headroom cannot be known", absent)
		}
	}
	if _, found := sample(t, text, "kneewatch_replica_headroom_ratio", ok); !found {
		t.Error("the healthy replica with a profile has no headroom")
	}
}

func TestEveryExportedFamilyIsInTheCatalog(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := fixedRound(t)
	reg.MustRegister(NewExporter(func() *Round { return r }))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		d, ok := catalog.Lookup(mf.GetName())
		if !ok {
			t.Errorf("%s is exported but not in the catalog", mf.GetName())
			continue
		}
		if mf.GetHelp() != d.Help {
			t.Errorf("%s help %q differs from the catalog's %q", mf.GetName(), mf.GetHelp(), d.Help)
		}
	}
}

func TestADownDCGMExporterMarksOnlyItselfDown(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	w := NewWatcher(WatcherOptions{Interval: 5 * time.Second, Window: time.Minute})
	dcgm := &DCGMTarget{URL: "dcgm", Selectors: []collector.GPUSelector{{Pod: "r", Namespace: "llm"}}}
	if err := w.SetTargets([]Target{{Replica: "r", ProfileName: "valid", Profile: loadValidProfile(t), DCGM: dcgm}}); err != nil {
		t.Fatal(err)
	}
	var e ReplicaEval
	for i := 0; i <= 14; i++ {
		e = w.assess(w.targets["r"], scrapeOutcome{snap: replicaSnapshot(t0, i), dcgm: &dcgmResult{err: errors.New("connection refused")}})
	}
	text := exposition(t, w.publish([]ReplicaEval{e}))
	if v, ok := sample(t, text, "kneewatch_target_up", map[string]string{"replica": "r", "source": "dcgm"}); !ok || v != 0 {
		t.Errorf("dcgm target_up = %v (present %v), want 0", v, ok)
	}
	if v, ok := sample(t, text, "kneewatch_target_up", map[string]string{"replica": "r", "source": "engine"}); !ok || v != 1 {
		t.Errorf("engine target_up = %v (present %v), want 1", v, ok)
	}
	labels := map[string]string{"replica": "r", "model": "meta-llama/Llama-3.1-8B-Instruct", "profile": "valid"}
	if _, ok := sample(t, text, "kneewatch_replica_headroom_ratio", labels); !ok {
		t.Error("headroom disappeared because the DCGM exporter is down; the engine metrics still give it")
	}
	if _, ok := sample(t, text, "kneewatch_replica_gpu_utilization_ratio", labels); ok {
		t.Error("GPU utilization exported while its source is down")
	}
}

// allFailing reports every replica's probes as all failing.
type allFailing struct{}

func (allFailing) Summary(string) (probe.Summary, bool) {
	return probe.Summary{Probes: 4, AllFailing: true}, true
}

func (allFailing) Traffic(string, time.Time, time.Time) (probe.Traffic, bool) {
	return probe.Traffic{}, true // failed probes add nothing to the mix
}

func TestAReplicaWhoseProbesAllFailIsNotHealthyWithHeadroom(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	w := NewWatcher(WatcherOptions{Interval: 5 * time.Second, Window: time.Minute, Probes: allFailing{}})
	if err := w.SetTargets([]Target{{Replica: "r", ProfileName: "valid", Profile: loadValidProfile(t)}}); err != nil {
		t.Fatal(err)
	}
	var e ReplicaEval
	for i := 0; i <= 14; i++ {
		e = w.assess(w.targets["r"], scrapeOutcome{snap: replicaSnapshot(t0, i)})
	}
	if e.Result.OK || e.Result.Reason != ReasonProbesFailing || !math.IsNaN(e.Result.Headroom) {
		t.Errorf("ok %v, reason %q, headroom %v; want not ok, %q, no headroom", e.Result.OK, e.Result.Reason, e.Result.Headroom, ReasonProbesFailing)
	}
	if !e.EngineUp || math.IsNaN(e.Observation.Load()) {
		t.Error("the engine's own metrics should still be read and exported")
	}
}
