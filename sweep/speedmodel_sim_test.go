package sweep

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/knee"
)

func TestSweepWithSpeedsAddsASpeedModel(t *testing.T) {
	if testing.Short() {
		t.Skip("two closed-loop sweeps against the simulator in wall time (a minute or two)")
	}
	kc := kneeCases[0]
	p := kc.simPreset(t)
	st := startSimPreset(t, p, kc.speed)
	start := time.Now()
	var logs bytes.Buffer
	slo := scaled(kc.slo(), kc.speed)
	out, err := Run(context.Background(), Config{
		Client: st.client(64), Workload: resolve(t, kc.workload), Seed: 1, SLO: slo,
		MaxConcurrency: 32, Precision: 0.25, MinRequests: 100, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Speeds: []float64{0.5},
	})
	t.Logf("took %s", time.Since(start).Round(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	// The SLO's bucket edges are the profile's, logged once: the speed's
	// rerun judges thresholds kneewatch serve never sees.
	if got, want := strings.Count(logs.String(), "is not a bucket edge of"), len(collector.CheckSLOEdges(out.Target.Engine, slo)); got != want {
		t.Errorf("the sweep logged %d bucket-edge warnings, want the profile's SLO's %d", got, want)
	}
	prof := out.Profile
	if err := prof.Validate(); err != nil {
		t.Fatalf("the profile with its speed model does not validate: %v", err)
	}
	if !prof.Sweep.FinishedAt.Equal(out.Finished.UTC()) {
		t.Errorf("the profile says the sweep finished at %s; it finished with its speed model's knees, at %s", prof.Sweep.FinishedAt, out.Finished.UTC())
	}
	m := prof.SpeedModel
	if m == nil || len(m.Points) != 1 {
		t.Fatalf("speed model %+v, want the knee at speed 0.5", m)
	}
	own, err := knee.MixPointOf(prof, knee.MixScale{Prompt: 1, Output: 1})
	if err != nil {
		t.Fatal(err)
	}
	pt := m.Points[0]
	t.Logf("speed 0.5: knee %g in flight at %.3g requests/s; at full speed %g at %.3g", pt.Concurrency, pt.RequestsPerSecond, own.Concurrency, own.RequestsPerSecond)
	// Half the speed: the knee under half the thresholds, at half its rate,
	// holds no more in flight and serves about half the requests or fewer.
	// Rates measured in wall time against the server carry a few percent
	// of noise: one CI run read 31.82 requests/s at 12 in flight against
	// half of 62.7 at 14.
	const rateNoise = 1.1
	if pt.Speed != 0.5 || !(pt.Concurrency <= own.Concurrency) || !(pt.RequestsPerSecond <= rateNoise*0.5*own.RequestsPerSecond) {
		t.Errorf("the knee at speed 0.5 is %g in flight at %g requests/s; want at most %g and %g", pt.Concurrency, pt.RequestsPerSecond,
			own.Concurrency, rateNoise*0.5*own.RequestsPerSecond)
	}
}
