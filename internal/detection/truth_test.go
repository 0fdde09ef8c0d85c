package detection

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
)

func TestBreachEpisodesJoinShortGaps(t *testing.T) {
	var truth []TruthPoint
	breached := map[int]bool{10: true, 11: true, 14: true, 40: true}
	for m := range 50 {
		truth = append(truth, TruthPoint{At: at(float64(m)), Breached: breached[m]})
	}
	want := []Episode{{Start: at(10), End: at(14)}, {Start: at(40), End: at(40)}}
	if diff := cmp.Diff(want, breachEpisodes(truth)); diff != "" {
		t.Errorf("episodes (-want +got):\n%s", diff)
	}
}

func TestKneeGridInterpolatesCapacity(t *testing.T) {
	g := &kneeGrid{shares: []float64{0, 0.1}, slowdowns: []float64{1, 2}, knees: [][]float64{{100, 50}, {50, 25}}}
	tests := []struct {
		name            string
		share, slowdown float64
		want            float64
	}{
		{"a grid point is its own knee", 0.1, 2, 25},
		{"half way between knees of 100 and 50 is the harmonic mean", 0.05, 1, 1 / ((1.0/100 + 1.0/50) / 2)},
		{"beyond the grid holds the last point", 0.5, 3, 25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, g.at(tt.share, tt.slowdown), approx); diff != "" {
				t.Errorf("knee (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTruthGridIsTheMedianOfItsSeedsAwayFromNominal(t *testing.T) {
	sc := &Scenario{
		Deployment: Deployment{Preset: "llama-3.1-8b-h100", Workload: "chat", Tightness: "tight"},
		Duration:   30 * time.Minute, AltWorkload: "rag",
		AltShare: func(t time.Duration) float64 { return 0.3 * min(t.Minutes()/10, 1) },
	}
	c := newKneeCache(Options{TruthGridSeeds: 3}.withDefaults())
	if len(c.gridSeeds) != 2 || c.gridSeeds[0].opts.Seed == c.opts.Seed || c.gridSeeds[1].opts.Seed == c.gridSeeds[0].opts.Seed {
		t.Fatalf("TruthGridSeeds 3: want 2 more caches with seeds of their own, got %d", len(c.gridSeeds))
	}
	// Each cache's knee at each share, as its search would have measured
	// it; a nil knee stands for a search that found the SLO unreachable.
	knees := map[float64][3]any{
		0:   {40.0, 10.0, 20.0}, // nominal: the run's own sweep, whatever the others say
		0.1: {30.0, 90.0, 60.0}, // median 60
		0.2: {nil, 50.0, 70.0},  // median of (unreachable, 50, 70): 50
		0.3: {nil, nil, 25.0},   // two unreachable: unreachable
		0.5: {1.0, 2.0, 3.0},    // beyond the scenario's largest share: not measured
		1:   {1.0, 2.0, 3.0},    // likewise
	}
	caches := []*kneeCache{c, c.gridSeeds[0], c.gridSeeds[1]}
	for share, ks := range knees {
		for i, k := range ks {
			alt := sc.AltWorkload
			if share == 0 {
				alt = ""
			}
			key := kneeKey{preset: sc.Deployment.Preset, workload: sc.Deployment.Workload, alt: alt, share: share, slowdown: 1, slo: sc.Deployment.SLO}
			caches[i].profiles.do(key, func() (knee.Profile, error) {
				if k == nil {
					return knee.Profile{}, sim.ErrSLOUnreachable
				}
				return knee.Profile{Knee: knee.Knee{Concurrency: k.(float64)}}, nil
			})
		}
	}
	g, err := c.grid(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	want := &kneeGrid{shares: []float64{0, 0.1, 0.2, 0.3}, slowdowns: []float64{1}, knees: [][]float64{{40}, {60}, {50}, {unreachableKnee}}}
	if diff := cmp.Diff(want, g, cmp.AllowUnexported(kneeGrid{})); diff != "" {
		t.Errorf("grid (-want +got):\n%s", diff)
	}
}

func TestGroundTruthLoadIsTheExactWindowMean(t *testing.T) {
	// 10 requests in flight all along: the integral grows by 50 per 5 s tick.
	tr := &runTrace{}
	for i := 1; i <= 24; i++ {
		off := time.Duration(i) * 5 * time.Second
		tr.ticks = append(tr.ticks, tickTruth{at: benchEpoch.Add(off), offset: off, inflightArea: 50 * float64(i), slowdown: 1})
	}
	g := &kneeGrid{shares: []float64{0}, slowdowns: []float64{1}, knees: [][]float64{{40}}}
	pts := groundTruth(tr, truthConfig{interval: 5 * time.Second, loadWindow: time.Minute, sloWindow: 2 * time.Minute, grid: g})
	for _, i := range []int{0, 5, 11, 23} {
		if diff := cmp.Diff(TruthPoint{At: tr.ticks[i].at, Load: 10, Knee: 40, Headroom: 0.75, TTFTP: nanValue(), TPOTP: nanValue(), Unknown: true}, pts[i], approx); diff != "" {
			t.Errorf("tick %d (-want +got):\n%s", i, diff)
		}
	}
}

// validAsPoisson is knee/testdata/valid.yaml, and the same profile with a
// poisson knee of 48 in flight at 30 requests/s beside its closed-loop one.
func validAsPoisson(t *testing.T) (*knee.Profile, knee.Profile) {
	t.Helper()
	closed, err := knee.Load("../../knee/testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	poisson := *closed
	poisson.Knee = knee.Knee{Concurrency: 48, OutputTokensPerSecond: 5000, GoodputTokensPerSecond: 4900, KVCacheUsage: 0.2,
		LimitingResource: closed.Knee.LimitingResource, Arrivals: knee.ArrivalsPoisson, RequestsPerSecond: 30,
		ClosedLoopConcurrency: closed.Knee.Concurrency}
	return closed, poisson
}

func TestClosedLoopWhatIfMovesOnlyTheKneeBack(t *testing.T) {
	closed, poisson := validAsPoisson(t)
	back, err := withClosedLoopKnee(poisson)
	if err != nil {
		t.Fatal(err)
	}
	want := closed.Knee
	want.Arrivals = knee.ArrivalsClosedLoop
	for _, pt := range closed.Points {
		if pt.Concurrency == closed.Knee.Concurrency {
			want.OutputTokensPerSecond, want.GoodputTokensPerSecond, want.KVCacheUsage = pt.OutputTokensPerSecond, pt.GoodputTokensPerSecond, pt.KVCacheUsage
		}
	}
	if diff := cmp.Diff(want, back.Knee, approx); diff != "" {
		t.Errorf("closed-loop knee (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(closed.Points, back.Points); diff != "" {
		t.Errorf("the curve changed (-want +got):\n%s", diff)
	}
	poisson.Knee.ClosedLoopConcurrency = 33
	if _, err := withClosedLoopKnee(poisson); err == nil {
		t.Error("a closed-loop knee between sweep points gave a profile, want an error")
	}
}

func TestTruthQuantileReachesBackAsFarAsItTakes(t *testing.T) {
	// One request every 10 s: 100 of them span 16.5 min, past the 10 min
	// knee.WindowedQuantile stops at, so it would leave the moment unjudged.
	var evs []knee.LatencyEvent
	for i := range 150 {
		evs = append(evs, knee.LatencyEvent{At: benchEpoch.Add(time.Duration(i) * 10 * time.Second), Seconds: float64(i)})
	}
	at := benchEpoch.Add(149 * 10 * time.Second)
	capped := knee.WindowedQuantile{Events: evs, Width: 2 * time.Minute, Q: 0.5}
	if v := capped.At(at); knee.Known(v) {
		t.Fatalf("knee.WindowedQuantile judged the moment (%v); the test no longer shows the cap", v)
	}
	w := knee.WindowedQuantile{Events: evs, Width: 2 * time.Minute, Q: 0.5, MaxStretch: -1}
	if v := w.At(at); !knee.Known(v) || v < 50 || v > 149 {
		t.Errorf("the truth's median of the last 100 requests is %v, want one of requests 50–149", v)
	}
	if v := w.At(benchEpoch.Add(98 * 10 * time.Second)); knee.Known(v) {
		t.Errorf("with 99 requests so far the truth judged the moment (%v), want unknown", v)
	}
}

// TestTheDefaultSweepsProfileIsTheDoublingUpToItsFirstBreak: the
// without-models what-if gives kneewatch a poisson profile as a default
// sweep writes it. valid.yaml's curve is the doubling 1–128 (128 broke)
// with 96 and 112 from the refinement. The default sweep stops after the
// break and one probe: in [64, 128) the crossing interpolated in
// log(margin) between 64 (p99 TTFT 170 ms of 500: margin 0.34) and 128
// (810 ms: 1.62) is 108.2, so it probes 108; the profile has no 108, and
// its nearest point inside the bracket, 112 (margin 0.94, kept), stands in.
// The closed-loop knee is then interpolated between 112 and 128:
// 112 + 16 × ln(1/0.94) ÷ ln(1.62/0.94) = 113.8, so 113. 96 is never
// measured.
func TestTheDefaultSweepsProfileIsTheDoublingUpToItsFirstBreak(t *testing.T) {
	closed, poisson := validAsPoisson(t)
	got, err := asDoublingSweep(poisson)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1, 2, 4, 8, 16, 32, 64, 112, 128}, got.Sweep.Levels); diff != "" {
		t.Errorf("levels (-want +got):\n%s", diff)
	}
	if len(got.Points) != 9 || got.Points[7].Concurrency != 112 || got.Points[8].Concurrency != 128 || got.Points[8].MeetsSLO {
		t.Errorf("points %v, want the doubling's 8 and 112, ending on 128's break", got.Sweep.Levels)
	}
	want := poisson.Knee
	want.ClosedLoopConcurrency = 113
	if diff := cmp.Diff(want, got.Knee); diff != "" {
		t.Errorf("knee (-want +got):\n%s", diff)
	}
	if len(poisson.Points) != len(closed.Points) {
		t.Errorf("the input profile's points were changed")
	}
	p50 := poisson
	p50.SLO.Quantile = 0.5
	if _, err := asDoublingSweep(p50); err == nil || !strings.Contains(err.Error(), "SLO quantile is 0.5") {
		t.Errorf("a p50 profile: error %v, want one naming the quantile", err)
	}
}
