package watch

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/internal/testtools"
	"github.com/kneewatch/kneewatch/knee"
)

func TestTheExportedKneeIsTheOneMovedWithTheMix(t *testing.T) {
	p, err := knee.Load(filepath.Join(testtools.ModuleRoot(), "knee", "testdata", "valid-mix.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	w := NewWatcher(WatcherOptions{Interval: 5 * time.Second, Window: time.Minute})
	if err := w.SetTargets([]Target{{Replica: "r", ProfileName: "valid", Profile: p}}); err != nil {
		t.Fatal(err)
	}
	var e ReplicaEval
	for i := 0; i <= 14; i++ {
		s := replicaSnapshot(t0, i)
		// Prompts twice as long as the profile's (246 tokens), outputs as long (205).
		n := float64(i) * 5
		s.Counters[collector.SignalPromptTokens] = 10 * n * 2 * p.Workload.MeanPromptTokens
		s.Counters[collector.SignalGenerationTokens] = 10 * n * p.Workload.MeanOutputTokens
		e = w.assess(w.targets["r"], scrapeOutcome{snap: s})
	}
	if !e.Result.OK {
		t.Fatalf("not OK: %s", e.Result.Reason)
	}
	moved := e.Result.Knee.Concurrency
	if !(moved < p.Knee.Concurrency) {
		t.Fatalf("knee with prompts ×2 = %g, want below the profile's %g", moved, p.Knee.Concurrency)
	}
	text := exposition(t, w.publish([]ReplicaEval{e}))
	labels := map[string]string{"replica": "r", "model": "meta-llama/Llama-3.1-8B-Instruct", "profile": "valid"}
	if got, ok := sample(t, text, "kneewatch_knee_concurrency", labels); !ok || got != moved {
		t.Errorf("kneewatch_knee_concurrency = %v (present %v), want the moved knee %g", got, ok, moved)
	}
}
