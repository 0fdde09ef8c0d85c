package sim

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

func TestOnlyALowerBound(t *testing.T) {
	pts := []knee.Point{{Concurrency: 128, RequestsPerSecond: 40}, {Concurrency: 256, RequestsPerSecond: 60}}
	closed := knee.Profile{Metadata: knee.Metadata{Partial: true}, Points: pts, Knee: knee.Knee{Concurrency: 256}}
	top := knee.Profile{Metadata: knee.Metadata{Partial: true}, Points: pts,
		Knee: knee.Knee{Concurrency: 150, Arrivals: knee.ArrivalsPoisson, RequestsPerSecond: 60, ClosedLoopConcurrency: 256}}
	below := top
	below.Knee.RequestsPerSecond = 51.3
	whole := below
	whole.Metadata.Partial = false
	for _, tt := range []struct {
		name string
		p    knee.Profile
		want bool
	}{{"a partial closed-loop knee", closed, true}, {"a poisson knee at the top of its bracket", top, true},
		{"a poisson knee below it", below, false}, {"a knee not partial", whole, false}} {
		if got := onlyALowerBound(tt.p); got != tt.want {
			t.Errorf("%s: onlyALowerBound = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A speed model's knee at speed e is the knee of the engine slowed by 1/e:
// closed-loop, where no arrival process separates them, exactly.
func TestASpeedModelsKneeIsTheSlowerEnginesKnee(t *testing.T) {
	if testing.Short() {
		t.Skip("three knee searches")
	}
	slo := knee.SLO{TTFT: knee.Duration(2 * time.Second), TPOT: knee.Duration(60 * time.Millisecond), Quantile: 0.99}
	cfg := kneeConfig(t, "llama-3.3-70b-fp8-h200", "chat", slo, 1, 256)
	cfg.Speeds = []float64{0.5}
	prof, err := FindKnee(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := prof.Validate(); err != nil {
		t.Fatalf("the profile with its speed model does not validate: %v", err)
	}
	if prof.SpeedModel == nil || len(prof.SpeedModel.Points) != 1 {
		t.Fatalf("speed model %+v, want one point", prof.SpeedModel)
	}
	slowCfg := kneeConfig(t, "llama-3.3-70b-fp8-h200", "chat", slo, 1, 256)
	slowCfg.Engine.Slowdown = 2
	slow, err := FindKnee(context.Background(), slowCfg)
	if err != nil {
		t.Fatal(err)
	}
	pt := prof.SpeedModel.Points[0]
	slowRate := pointAt(t, slow, slow.Knee.Concurrency).RequestsPerSecond
	// Profiles round their points' rates.
	if pt.Concurrency != slow.Knee.Concurrency || math.Abs(pt.RequestsPerSecond/slowRate-1) > 1e-3 {
		t.Errorf("speed 0.5: knee %g in flight at %g requests/s; the engine 2× slower: %g at %g", pt.Concurrency, pt.RequestsPerSecond,
			slow.Knee.Concurrency, slowRate)
	}
	if !(pt.Concurrency < prof.Knee.Concurrency) {
		t.Errorf("the knee at half speed (%g) is not below the full-speed one (%g)", pt.Concurrency, prof.Knee.Concurrency)
	}
}

// A speed just under 1 measures nearly the profile's own knee again, and a
// Poisson search's knee moves with its seed by more than the 10% a slower
// GPU's knee may read above a faster one's: on seed 15 of these short
// searches the full-speed knee read 8.85 requests/s and the knee at 0.97
// speed 11.8 (2026-12-07). Such a point is left out with a warning; before,
// the whole search failed at its end on the profile's validation.
func TestASpeedWhoseKneeReadsAboveTheFullSpeedKneeIsLeftOut(t *testing.T) {
	if testing.Short() {
		t.Skip("twenty short Poisson searches, each with a speed model (about 5 s)")
	}
	slo := knee.SLO{TTFT: knee.Duration(2 * time.Second), TPOT: knee.Duration(60 * time.Millisecond), Quantile: 0.99}
	const warning = "the speed model leaves out a speed whose knee reads above the full-speed knee's request rate"
	left := 0
	for seed := uint64(1); seed <= 20; seed++ {
		cfg := kneeConfig(t, "llama-3.3-70b-fp8-h200", "chat", slo, 1, 256)
		cfg.Arrivals, cfg.OpenLoop, cfg.Seed, cfg.Speeds = knee.ArrivalsPoisson, shortOpenLoop, seed, []float64{0.97}
		var logs bytes.Buffer
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		prof, err := FindKnee(context.Background(), cfg)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := prof.Validate(); err != nil {
			t.Fatalf("seed %d: the profile does not validate: %v", seed, err)
		}
		warned := strings.Contains(logs.String(), warning)
		if kept := prof.SpeedModel != nil; kept == warned {
			t.Errorf("seed %d: speed model %+v, warned %v: a point is either kept or left out with the warning", seed, prof.SpeedModel, warned)
		}
		if warned {
			left++
			if !strings.Contains(logs.String(), "speed=0.97") {
				t.Errorf("seed %d: the warning does not name the speed: %s", seed, logs.String())
			}
		}
	}
	t.Logf("left out at %d of 20 seeds", left)
	if left == 0 {
		t.Error("no seed put the knee at 0.97 speed above the full-speed one: the test no longer reaches the rule; try other seeds or a speed nearer 1")
	}
}
