package main

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/probe"
	"github.com/kneewatch/kneewatch/sweep"
	"github.com/kneewatch/kneewatch/watch"
	"github.com/kneewatch/kneewatch/workload"
	"github.com/prometheus/client_golang/prometheus"
)

func TestProbeTargetsCarryTheKneeAndTheSLO(t *testing.T) {
	prof := &knee.Profile{
		SLO:  knee.SLO{TTFT: knee.Duration(300 * time.Millisecond), TPOT: knee.Duration(30 * time.Millisecond), Quantile: 0.99},
		Knee: knee.Knee{Concurrency: 64, OutputTokensPerSecond: 4000},
	}
	global := knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(50 * time.Millisecond), Quantile: 0.9}
	got := probeTargets([]watch.Target{
		{Replica: "a", Model: "m", OpenAIURL: "http://a:8000/v1", Profile: prof, SLO: global},
		{Replica: "b", OpenAIURL: "http://b:8000/v1", SLO: global},
		{Replica: "c", SLO: global}, // no OpenAI URL: not probed
	})
	want := []probe.Target{
		{Replica: "a", Model: "m", BaseURL: "http://a:8000/v1", KneeOutputTokensPerSecond: 4000, SLOTTFT: 300 * time.Millisecond, SLOTPOT: 30 * time.Millisecond},
		{Replica: "b", BaseURL: "http://b:8000/v1", SLOTTFT: time.Second, SLOTPOT: 50 * time.Millisecond},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("probe targets (-want +got):\n%s", diff)
	}
}

func TestTheProbeRunnerReadsTheWatchersLatestRound(t *testing.T) {
	obs := knee.NewObservation()
	obs.Waiting, obs.QueueGrowthPerSecond = 3, 0.4
	round := &watch.Round{Replicas: []watch.ReplicaEval{
		{Replica: "a", Model: "m", Observation: obs, Result: knee.Result{OK: true, Headroom: -0.3}},
		{Replica: "b", Model: "m", Observation: obs, Result: knee.Result{OK: false, Reason: watch.ReasonEngineDown, Headroom: math.NaN()}},
	}}
	nan := math.NaN()
	tests := []struct {
		name    string
		round   *watch.Round
		replica string
		want    probe.ReplicaState
		wantOK  bool
	}{
		{"no round yet: unknown", nil, "a", probe.ReplicaState{}, false},
		{"a replica not in the round: unknown", round, "zz", probe.ReplicaState{}, false},
		{"an ok evaluation gives its headroom and queue", round, "a", probe.ReplicaState{Model: "m", Headroom: -0.3, QueueGrowthPerSecond: 0.4, Waiting: 3}, true},
		{"an evaluation that is not ok has no headroom", round, "b", probe.ReplicaState{Model: "m", Headroom: nan, QueueGrowthPerSecond: 0.4, Waiting: 3}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := watcherState(func() *watch.Round { return tt.round })(tt.replica)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewProberIsOffUnlessEnabledAndChecksTheKeySource(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	off := config.DefaultProbes()
	if r, err := newProber(off, time.Minute, nil, logger); r != nil || err != nil {
		t.Errorf("disabled probes: runner %v, err %v; want none", r, err)
	}
	if proberCollectors(nil) != nil {
		t.Error("a nil runner has collectors")
	}
	if err := runProber(context.Background(), nil, nil); err != nil {
		t.Errorf("running a nil runner: %v", err)
	}
	missing := config.DefaultProbes()
	missing.Enabled = true
	missing.APIKeyFile = filepath.Join(t.TempDir(), "absent")
	if _, err := newProber(missing, time.Minute, nil, logger); err == nil || !strings.Contains(err.Error(), "probes.api_key_file") {
		t.Errorf("a missing key file: err %v, want one naming probes.api_key_file", err)
	}
}

// countProbes counts the probe requests a replica receives (by the probe's
// User-Agent), next to the load generator's.
func countProbes(h http.Handler, n *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.UserAgent(), "kneewatch-probe") {
			n.Add(1)
		}
		h.ServeHTTP(w, r)
	})
}

// TestNoProbeReachesAReplicaPastItsKnee is the safety switch end to end: a
// simulated replica whose knee is 8 in flight, watched by a real watcher
// against its true knee profile and probed five times a second. Idle, it is
// probed; held at 16 in flight, the watcher puts it past its knee and from
// then on the replica receives no probe at all (counted by the replica's
// own HTTP server); unloaded, probes resume.
func TestNoProbeReachesAReplicaPastItsKnee(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a simulated replica under load in real time")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	preset, err := sim.LoadPreset("llama-3.1-8b-h100")
	if err != nil {
		t.Fatal(err)
	}
	preset.MaxNumSeqs = 8
	slo := knee.SLO{TTFT: knee.Duration(200 * time.Millisecond), TPOT: knee.Duration(20 * time.Millisecond), Quantile: 0.99}
	chat, err := workload.Resolve("chat", 1)
	if err != nil {
		t.Fatal(err)
	}
	prof, err := sim.FindKnee(ctx, sim.KneeConfig{Engine: sim.Config{Preset: preset}, Workload: chat, SLO: slo, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.NewReplica(sim.ReplicaConfig{Name: "sim-0", Preset: preset})
	if err != nil {
		t.Fatal(err)
	}
	go rep.Run(ctx)
	var probes atomic.Int64
	srv := httptest.NewServer(countProbes(rep.Handler(), &probes))
	defer srv.Close()

	targets := []watch.Target{{
		Replica: "sim-0", Model: preset.Model, Engine: "vllm", MetricsURL: srv.URL + "/metrics",
		ProfileName: "truth", Profile: &prof, SLO: slo, OpenAIURL: srv.URL + "/v1",
	}}
	w := watch.NewWatcher(watch.WatcherOptions{Interval: 250 * time.Millisecond, Window: 3 * time.Second})
	if err := w.SetTargets(targets); err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.Run(ctx) }()

	cfg := config.DefaultProbes()
	cfg.Enabled = true
	cfg.Interval, cfg.Timeout = config.Duration(200*time.Millisecond), config.Duration(180*time.Millisecond)
	cfg.MaxTokens = 4
	cfg.LoadRatioCap = 0.05 // 4 tokens per 200 ms is 2.2% of this small knee's 905 tok/s
	prober, err := newProber(cfg, 3*time.Second, targets, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = runProber(ctx, prober, w) }()
	reg := prometheus.NewRegistry()
	reg.MustRegister(proberCollectors(prober)...)

	headroom := func() float64 {
		if r := w.Latest(); r != nil && len(r.Replicas) == 1 && r.Replicas[0].Result.OK {
			return r.Replicas[0].Result.Headroom
		}
		return math.NaN()
	}
	time.Sleep(1500 * time.Millisecond)
	idle, _ := prober.Summary("sim-0")
	if probes.Load() < 3 || idle.Successes < 3 {
		t.Fatalf("idle replica (headroom %.2f): %d probes arrived, %d succeeded; want ≥ 3", headroom(), probes.Load(), idle.Successes)
	}
	t.Logf("idle: headroom %.2f, %d probes arrived, TTFT attainment %.2f", headroom(), probes.Load(), idle.TTFTAttainment)

	loop := &sweep.ClosedLoop{
		Client: &sweep.Client{BaseURL: srv.URL + "/v1", Stream: true, Prompt: workload.PromptOfTokens,
			HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}},
		Next: func() sweep.Request { return sweep.Request{PromptTokens: 64, MaxTokens: 32} },
	}
	defer loop.Stop()
	loop.SetConcurrency(ctx, 16)
	// Past the knee from the round whose window reads the load itself past
	// it. This test's time is compressed (a 3 s window, 250 ms rounds,
	// where serve's window is 1 min), while a request's first token still
	// takes its own time: in the rounds right after the load starts, the
	// window's token rate lags its queue gauges, the replica reads as a slow
	// GPU (throughput efficiency 0.08) and the effective load as 3× the
	// knee, and it falls back as the window fills (to 0.92 at a load of 0.5
	// of the knee). The switch is judged from where the load is past the
	// knee, not on that onset.
	loadRatio := func() float64 {
		if r := w.Latest(); r != nil && len(r.Replicas) == 1 && r.Replicas[0].Result.OK {
			return r.Replicas[0].Result.Ratios[knee.DimensionLoad]
		}
		return math.NaN()
	}
	deadline := time.Now().Add(10 * time.Second)
	for !(headroom() < 0 && loadRatio() > 1) {
		if time.Now().After(deadline) {
			t.Fatalf("the watcher never saw 16 in flight as past the knee of %.0f (headroom %.2f, load ÷ knee %.2f)", prof.Knee.Concurrency, headroom(), loadRatio())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A probe sent just before the round flipped may still be in flight.
	time.Sleep(cfg.Timeout.D() + 50*time.Millisecond)
	before, skipped0 := probes.Load(), skippedPastKnee(t, reg)
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if h := headroom(); !(h < 0) {
			t.Fatalf("headroom went back to %.2f under 16 in flight", h)
		}
	}
	if sent, skipped := probes.Load()-before, skippedPastKnee(t, reg)-skipped0; sent != 0 || skipped < 10 {
		t.Errorf("past the knee for 3 s: %d probes reached the replica, %v skipped as past_knee; want none and ≥ 10", sent, skipped)
	}
	t.Logf("past the knee: headroom %.2f, no probe in 3 s, %v skipped", headroom(), skippedPastKnee(t, reg)-skipped0)

	loop.SetConcurrency(ctx, 0)
	before = probes.Load()
	deadline = time.Now().Add(10 * time.Second)
	for probes.Load() == before {
		if time.Now().After(deadline) {
			t.Fatalf("probes did not resume within 10 s of the load ending (headroom %.2f)", headroom())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// skippedPastKnee reads kneewatch_probe_skipped_total{reason="past_knee"}.
func skippedPastKnee(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "kneewatch_probe_skipped_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == "past_knee" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatal("no kneewatch_probe_skipped_total{reason=\"past_knee\"}")
	return 0
}
