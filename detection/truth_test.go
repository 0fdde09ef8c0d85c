package detection

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
		if diff := cmp.Diff(TruthPoint{At: tr.ticks[i].at, Load: 10, Knee: 40, Headroom: 0.75, TTFTP: nanValue(), TPOTP: nanValue()}, pts[i], approx); diff != "" {
			t.Errorf("tick %d (-want +got):\n%s", i, diff)
		}
	}
}

func TestPoissonKneeMovesOnlyTheKneeAndTheClosedLoopOneComesBack(t *testing.T) {
	closed, err := knee.Load("../knee/testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	at32 := closed.Points[5]
	at64 := closed.Points[6]
	got, err := withPoissonKnee(*closed, 30, 48, []float64{10, 50, 30})
	if err != nil {
		t.Fatal(err)
	}
	want := knee.Knee{
		Concurrency:            48,
		OutputTokensPerSecond:  (at32.OutputTokensPerSecond + at64.OutputTokensPerSecond) / 2,
		GoodputTokensPerSecond: (at32.GoodputTokensPerSecond + at64.GoodputTokensPerSecond) / 2,
		KVCacheUsage:           (at32.KVCacheUsage + at64.KVCacheUsage) / 2,
		LimitingResource:       closed.Knee.LimitingResource,
		Arrivals:               knee.ArrivalsPoisson,
		RequestsPerSecond:      30,
		ClosedLoopConcurrency:  closed.Knee.Concurrency,
	}
	if diff := cmp.Diff(want, got.Knee, approx); diff != "" {
		t.Errorf("Poisson knee (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(closed.Points, got.Points); diff != "" {
		t.Errorf("the curve changed (-want +got):\n%s", diff)
	}
	back, err := withClosedLoopKnee(got)
	if err != nil {
		t.Fatal(err)
	}
	if back.Knee.Concurrency != closed.Knee.Concurrency || back.Knee.Arrivals != knee.ArrivalsClosedLoop {
		t.Errorf("closed-loop knee back: concurrency %v (%s), want %v (closed-loop)", back.Knee.Concurrency, back.Knee.Arrivals, closed.Knee.Concurrency)
	}
	if _, err := withPoissonKnee(*closed, 30, 0, nil); err == nil {
		t.Error("a Poisson knee of 0 in flight gave a profile, want an error")
	}
}
