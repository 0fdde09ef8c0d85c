package sweep

import (
	"context"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

func TestSweepWithMixScalesAddsAMixModel(t *testing.T) {
	if testing.Short() {
		t.Skip("four closed-loop sweeps against the simulator in wall time (a few minutes)")
	}
	kc := kneeCases[0]
	p := kc.simPreset(t)
	st := startSimPreset(t, p, kc.speed)
	start := time.Now()
	out, err := Run(context.Background(), Config{
		Client: st.client(64), Workload: resolve(t, kc.workload), Seed: 1, SLO: scaled(kc.slo(), kc.speed),
		MaxConcurrency: 32, Precision: 0.25, MinRequests: 100, Logger: testLogger(t),
		MixScales: []knee.MixScale{{Prompt: 2, Output: 1}, {Prompt: 1, Output: 2}, {Prompt: 2, Output: 2}}, MaxModelLen: p.MaxModelLen,
	})
	t.Logf("took %s", time.Since(start).Round(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	prof := out.Profile
	if err := prof.Validate(); err != nil {
		t.Fatalf("the profile with its mix model does not validate: %v", err)
	}
	if !prof.Sweep.FinishedAt.Equal(out.Finished.UTC()) {
		t.Errorf("the profile says the sweep finished at %s; it finished with its mix model's knees, at %s", prof.Sweep.FinishedAt, out.Finished.UTC())
	}
	m := prof.MixModel
	if m == nil || len(m.Points) != 4 {
		t.Fatalf("mix model %+v, want the profile's knee and 3 scaled ones", m)
	}
	for _, pt := range m.Points {
		t.Logf("prompt ×%g output ×%g: %.0f/%.0f tokens, knee %g at %.3g requests/s", pt.PromptScale, pt.OutputScale,
			pt.MeanPromptTokens, pt.MeanOutputTokens, pt.Concurrency, pt.RequestsPerSecond)
	}
	own, longer := m.Points[0], m.Points[1]
	if own.Concurrency != prof.Knee.Concurrency || longer.PromptScale != 2 || !(longer.RequestsPerSecond < own.RequestsPerSecond) {
		t.Errorf("prompts ×2 served %g requests/s at the knee, the profile's mix %g: want fewer", longer.RequestsPerSecond, own.RequestsPerSecond)
	}
}
