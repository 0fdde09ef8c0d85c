package watch

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/internal/testtools"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/rules"
)

// simCurveProfile is the curve the simulator measured for Llama-3.1-8B on
// an H100 with the chat mix: throughput bends over well before the knee at
// 98 in flight, as real engines' does.
func simCurveProfile() *knee.Profile {
	p := &knee.Profile{
		APIVersion: knee.APIVersion, Kind: knee.Kind, Match: knee.Match{Model: "llama"},
		SLO:      knee.SLO{TTFT: knee.Duration(200 * time.Millisecond), TPOT: knee.Duration(20 * time.Millisecond), Quantile: 0.99},
		Workload: knee.WorkloadInfo{MeanPromptTokens: 300, MeanOutputTokens: 200},
		Knee:     knee.Knee{Concurrency: 98, OutputTokensPerSecond: 5858, GoodputTokensPerSecond: 5817, KVCacheUsage: 0.078, LimitingResource: knee.ResourceCompute},
	}
	for _, c := range [][2]float64{{1, 119}, {8, 905}, {16, 1697}, {32, 2983}, {64, 4873}, {96, 5742}, {98, 5858}, {128, 6225}, {256, 6672}} {
		p.Points = append(p.Points, knee.Point{Concurrency: c[0], Requests: 500, RequestsPerSecond: c[1] / 200, OutputTokensPerSecond: c[1],
			GoodputTokensPerSecond: c[1], MeetsSLO: c[0] <= 98})
	}
	return p
}

// TestAFleetAboveTheTargetHeadroomIsNotShort: three replicas each held at
// headroom 0.3 (target 0.2), behaving exactly like their profile, through
// the watcher and the exporter for 20 minutes, then the real promtool with
// the shipped rules: KneewatchFleetCapacityLow stays quiet and the fleet
// reads as needing fewer replicas than it has. Sizing by output tokens/s ÷
// knee goodput read 3.22 for these three.
func TestAFleetAboveTheTargetHeadroomIsNotShort(t *testing.T) {
	promtool := testtools.Path(t, "promtool")
	prof := simCurveProfile()
	load := 0.7 * prof.Knee.Concurrency
	at, ok := prof.CurveAt(load)
	if !ok {
		t.Fatal("no curve point")
	}
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := start
	w := NewWatcher(WatcherOptions{Interval: 15 * time.Second, Window: time.Minute, TargetHeadroom: 0.2, Now: func() time.Time { return clock }})
	var targets []Target
	for i := range 3 {
		targets = append(targets, Target{Replica: fmt.Sprintf("r%d", i), Engine: "vllm", MetricsURL: fmt.Sprintf("http://r%d/metrics", i), ProfileName: "llama", Profile: prof})
	}
	if err := w.SetTargets(targets); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewExporter(w.Latest))
	const minutes = 20
	series := map[string][]string{}
	for minute := 0; minute <= minutes; minute++ {
		for step := range 4 {
			clock = start.Add(time.Duration(minute)*time.Minute + time.Duration(step)*15*time.Second)
			elapsed := clock.Sub(start).Seconds()
			var scrapes []ReplayScrape
			for _, tg := range targets {
				s := collector.NewSnapshot("vllm")
				s.Time = clock
				s.Model = "llama"
				s.Gauges[collector.SignalRunning], s.Gauges[collector.SignalWaiting], s.Gauges[collector.SignalKVUsage] = load, 0, 0.05
				s.Counters[collector.SignalGenerationTokens] = at.OutputTokensPerSecond * elapsed
				s.Counters[collector.SignalRequestsFinished] = at.OutputTokensPerSecond / 200 * elapsed
				s.Counters[collector.SignalPromptTokens] = at.OutputTokensPerSecond / 200 * 300 * elapsed
				scrapes = append(scrapes, ReplayScrape{Replica: tg.Replica, Engine: s})
			}
			if _, err := w.Replay(scrapes); err != nil {
				t.Fatal(err)
			}
		}
		r := w.Latest()
		if minute > 0 {
			for _, e := range r.Replicas {
				if math.Abs(e.Result.Headroom-0.3) > 0.01 {
					t.Fatalf("minute %d: %s headroom %v, want 0.3", minute, e.Replica, e.Result.Headroom)
				}
			}
			if f := r.Fleet["llama"]; !(f.ReplicasNeeded <= float64(f.Available)) {
				t.Fatalf("minute %d: %v replicas needed for %d at headroom 0.3", minute, f.ReplicasNeeded, f.Available)
			}
		}
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
	f := w.Latest().Fleet["llama"]
	t.Logf("3 replicas at headroom 0.3 (target 0.2): fleet_replicas %d, fleet_replicas_needed %.3f (output tokens/s ÷ knee goodput: %.3f)",
		f.Available, f.ReplicasNeeded, f.OfferedTokensPerSecond/(prof.Knee.GoodputTokensPerSecond*0.8))

	dir := t.TempDir()
	var rb bytes.Buffer
	if err := rules.Render(&rb, rules.DefaultOptions(), rules.FormatRules); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	test := "rule_files: [rules.yaml]\nevaluation_interval: 1m\ntests:\n" +
		"  - name: three replicas at headroom 0.3 (target 0.2) are not short of replicas\n    interval: 1m\n    input_series:\n" + promtoolSeries(series) +
		fmt.Sprintf("    alert_rule_test:\n      - eval_time: %dm\n        alertname: %s\n        exp_alerts: []\n", minutes, rules.AlertFleetCapacityLow)
	if err := os.WriteFile(filepath.Join(dir, "fleet.test.yaml"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, promtool, "test", "rules", "fleet.test.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
