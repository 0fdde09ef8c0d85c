package knee

import (
	"math"
	"testing"
	"time"
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
