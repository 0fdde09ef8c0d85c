package knee

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var windowEpoch = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// events makes latency events of the given seconds, one every gap from start.
func events(start time.Time, gap time.Duration, secs ...float64) []LatencyEvent {
	out := make([]LatencyEvent, len(secs))
	for i, s := range secs {
		out[i] = LatencyEvent{At: start.Add(time.Duration(i+1) * gap), Seconds: s}
	}
	return out
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestWindowedQuantile(t *testing.T) {
	// 200 requests, one per second: 198 fast ones and two slow ones at the end.
	secs := append(repeat(0.1, 198), 3, 3)
	evs := events(windowEpoch, time.Second, secs...)
	tests := []struct {
		name  string
		width time.Duration
		at    time.Time
		want  float64
	}{
		{"a window of 120 requests with two slow ones has their tail in its p99", 2 * time.Minute, windowEpoch.Add(200 * time.Second), 0.1 + 0.81*2.9},
		{"a window before the slow requests sees only fast ones", 2 * time.Minute, windowEpoch.Add(198 * time.Second), 0.1},
		{"a window with too few requests reaches back to the last hundred", 30 * time.Second, windowEpoch.Add(198 * time.Second), 0.1},
		{"with fewer than a hundred requests in reach the SLO is not judged", 30 * time.Second, windowEpoch.Add(60 * time.Second), math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := WindowedQuantile{Events: evs, Width: tt.width, Q: 0.99}
			got := w.At(tt.at)
			if math.IsNaN(tt.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tt.want) > 1e-9) {
				t.Errorf("p99 = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestKeptSLOFailsAtTheFirstWindowOverTheThreshold(t *testing.T) {
	slo := SLO{TTFT: Duration(time.Second), TPOT: Duration(50 * time.Millisecond), Quantile: 0.99}
	fast := events(windowEpoch, time.Second, repeat(0.2, 600)...)
	tpot := events(windowEpoch, time.Second, repeat(0.02, 600)...)
	slow := events(windowEpoch, time.Second, append(repeat(0.2, 400), repeat(1.5, 200)...)...)
	from, to := windowEpoch.Add(3*time.Minute), windowEpoch.Add(10*time.Minute)
	if !KeptSLO(fast, tpot, slo, DefaultSLOWindow, from, to, 5*time.Second) {
		t.Error("steady fast requests broke the SLO")
	}
	if KeptSLO(slow, tpot, slo, DefaultSLOWindow, from, to, 5*time.Second) {
		t.Error("200 s of 1.5 s TTFTs against a 1 s SLO kept it")
	}
	if !KeptSLO(slow, tpot, slo, DefaultSLOWindow, from, windowEpoch.Add(400*time.Second), 5*time.Second) {
		t.Error("the SLO broke before the slow requests came")
	}
}

func TestTTFTByDeadlineCountsAMissWhenItIsKnown(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	firsts := []LatencyEvent{
		{At: at(1), Seconds: 0.5}, // in time
		{At: at(40), Seconds: 30}, // arrived at 10, missed a 5 s threshold at 15
		{At: at(41), Seconds: 1},
	}
	waiting := []time.Time{at(20), at(58)} // no first token by 60: one known miss, one too young to judge
	got := TTFTByDeadline(firsts, waiting, at(60), 5*time.Second)
	want := []LatencyEvent{
		{At: at(1), Seconds: 0.5},
		{At: at(15), Seconds: 30},
		{At: at(25), Seconds: 40},
		{At: at(41), Seconds: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// A queue that grows through a trial must break a TTFT SLO even when the
// requests stuck in it never get a first token before the trial ends.
func TestAGrowingQueueBreaksTheSLOThroughItsStuckRequests(t *testing.T) {
	t0 := time.Unix(0, 0)
	slo := SLO{TTFT: Duration(5 * time.Second), TPOT: Duration(time.Second), Quantile: 0.99}
	var firsts, tpot []LatencyEvent
	var stuck []time.Time
	// 300 s at 2 requests/s: the first 400 are served in 1 s, the rest wait.
	for i := range 600 {
		arrived := t0.Add(time.Duration(i) * 500 * time.Millisecond)
		if i < 400 {
			firsts = append(firsts, LatencyEvent{At: arrived.Add(time.Second), Seconds: 1})
			tpot = append(tpot, LatencyEvent{At: arrived.Add(2 * time.Second), Seconds: 0.01})
			continue
		}
		stuck = append(stuck, arrived)
	}
	end := t0.Add(300 * time.Second)
	if !KeptSLO(firsts, tpot, slo, 2*time.Minute, t0.Add(time.Minute), end, 5*time.Second) {
		t.Fatal("judged by first tokens alone the trial should (wrongly) keep the SLO; the test no longer shows the bug")
	}
	if KeptSLO(TTFTByDeadline(firsts, stuck, end, slo.TTFT.D()), tpot, slo, 2*time.Minute, t0.Add(time.Minute), end, 5*time.Second) {
		t.Error("with the stuck requests counted from their deadlines the trial kept the SLO")
	}
}

func TestATrialNoTickOfWhichCouldBeJudgedDidNotKeepTheSLO(t *testing.T) {
	t0 := time.Unix(0, 0)
	slo := SLO{TTFT: Duration(time.Second), TPOT: Duration(time.Second), Quantile: 0.99}
	var ttft, tpot []LatencyEvent
	for i := range MinWindowRequests - 1 { // all good, but too few for a p99
		at := t0.Add(time.Duration(i) * 10 * time.Second)
		ttft = append(ttft, LatencyEvent{At: at, Seconds: 0.1})
		tpot = append(tpot, LatencyEvent{At: at, Seconds: 0.01})
	}
	end := t0.Add(20 * time.Minute)
	if KeptSLO(ttft, tpot, slo, 2*time.Minute, t0.Add(time.Minute), end, 5*time.Second) {
		t.Error("a trial of 99 requests, too few for any p99, kept the SLO")
	}
	ttft = append(ttft, LatencyEvent{At: end, Seconds: 0.1})
	tpot = append(tpot, LatencyEvent{At: end, Seconds: 0.01})
	if !KeptSLO(ttft, tpot, slo, 2*time.Minute, t0.Add(time.Minute), end, 5*time.Second) {
		t.Error("with the 100th good request the last tick can be judged and the trial kept the SLO")
	}
}
