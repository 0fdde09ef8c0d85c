package probe

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// outcome is one finished probe for building a replica's history.
type outcome struct {
	at   time.Duration // after t0
	res  Result
	skip bool // a skipped slot instead of a probe
}

func ok(ttft, tpot time.Duration) Result {
	return Result{TTFT: ttft, TPOT: tpot, OutputTokens: 16, StatusCode: 200}
}

func fail(c Class) Result { return Result{Class: c} }

// history feeds outcomes into a replica with a 200 ms TTFT and 20 ms TPOT SLO.
func history(t *testing.T, outcomes []outcome) *replicaState {
	t.Helper()
	s := newReplicaState(Target{Replica: "r", KneeOutputTokensPerSecond: 1e6, SLOTTFT: 200 * time.Millisecond, SLOTPOT: 20 * time.Millisecond})
	for _, o := range outcomes {
		if o.skip {
			s.skip(ReasonPastKnee)
			continue
		}
		id, ok := s.reserve(t0.Add(o.at), 16, 0.5, time.Minute)
		if !ok {
			t.Fatalf("probe at %v over budget", o.at)
		}
		s.finish(id, o.res, t0.Add(o.at+time.Second))
	}
	return s
}

func TestTheSummaryCoversTheWindowsProbes(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name     string
		outcomes []outcome
		want     Summary
	}{
		{"no probe yet: nothing known", nil,
			Summary{Window: time.Minute, SuccessRatio: nan, TTFTAttainment: nan, TPOTAttainment: nan}},
		{"two failures and no success: all failing",
			[]outcome{{at: 0, res: fail(ClassTimeout)}, {at: 30 * time.Second, res: fail(ClassHTTP5xx)}},
			Summary{Window: time.Minute, Probes: 2, SuccessRatio: 0, TTFTAttainment: nan, TPOTAttainment: nan, AllFailing: true, LastClass: ClassHTTP5xx}},
		{"a single failure is not yet all failing",
			[]outcome{{at: 30 * time.Second, res: fail(ClassConnect)}},
			Summary{Window: time.Minute, Probes: 1, SuccessRatio: 0, TTFTAttainment: nan, TPOTAttainment: nan, LastClass: ClassConnect}},
		{"one success among failures is not all failing",
			[]outcome{{at: 0, res: fail(ClassTimeout)}, {at: 20 * time.Second, res: ok(100*time.Millisecond, 10*time.Millisecond)}, {at: 40 * time.Second, res: fail(ClassTimeout)}},
			Summary{Window: time.Minute, Probes: 3, Successes: 1, SuccessRatio: 1.0 / 3, TTFTAttainment: 1, TPOTAttainment: 1, LastClass: ClassTimeout}},
		{"a probe exactly at the threshold attains it; one above does not",
			[]outcome{{at: 0, res: ok(200*time.Millisecond, 20*time.Millisecond)}, {at: 20 * time.Second, res: ok(201*time.Millisecond, 21*time.Millisecond)}},
			Summary{Window: time.Minute, Probes: 2, Successes: 2, SuccessRatio: 1, TTFTAttainment: 0.5, TPOTAttainment: 0.5}},
		{"a success without a TPOT counts for TTFT only",
			[]outcome{{at: 0, res: ok(50*time.Millisecond, 0)}},
			Summary{Window: time.Minute, Probes: 1, Successes: 1, SuccessRatio: 1, TTFTAttainment: 1, TPOTAttainment: nan}},
		{"probes that finished before the window are forgotten",
			[]outcome{{at: -2 * time.Minute, res: fail(ClassTimeout)}, {at: -90 * time.Second, res: fail(ClassTimeout)}, {at: 50 * time.Second, res: ok(10*time.Millisecond, 5*time.Millisecond)}},
			Summary{Window: time.Minute, Probes: 1, Successes: 1, SuccessRatio: 1, TTFTAttainment: 1, TPOTAttainment: 1}},
		{"skipped probes are not probes",
			[]outcome{{skip: true}, {skip: true}, {skip: true}},
			Summary{Window: time.Minute, SuccessRatio: nan, TTFTAttainment: nan, TPOTAttainment: nan}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := history(t, tt.outcomes)
			got := s.summaryLocked(t0.Add(time.Minute), time.Minute)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateNaNs(), cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHistogramEdgesIncludeTheSLOThreshold(t *testing.T) {
	tests := []struct {
		name      string
		base      []float64
		threshold float64
		want      []float64
	}{
		{"a threshold between edges is added", []float64{0.1, 0.25, 0.5}, 0.2, []float64{0.1, 0.2, 0.25, 0.5}},
		{"a threshold that is an edge is not doubled", []float64{0.1, 0.25, 0.5}, 0.25, []float64{0.1, 0.25, 0.5}},
		{"a threshold past the last edge becomes the last", []float64{0.1, 0.25}, 60, []float64{0.1, 0.25, 60}},
		{"no threshold adds nothing", []float64{0.1, 0.25}, 0, []float64{0.1, 0.25}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, bucketsWith(tt.base, tt.threshold)); diff != "" {
				t.Errorf("edges (-want +got):\n%s", diff)
			}
		})
	}
	// Observations at the threshold fall in its bucket (le is inclusive).
	h := newHistogram(bucketsWith(ttftBuckets, 0.2))
	for _, v := range []float64{0.05, 0.2, 0.2000001, 40} {
		h.observe(v)
	}
	i := 0
	for h.bounds[i] != 0.2 {
		i++
	}
	var within uint64
	for _, c := range h.counts[:i+1] {
		within += c
	}
	if within != 2 || h.count != 4 {
		t.Errorf("%d of %d observations ≤ 0.2, want 2 of 4", within, h.count)
	}
}

// TestTrafficCountsWhatTheEngineCounted: the successful probes that finished
// in the span, with the server's prompt count when it sent usage, else the
// probe's own prompt size; failures and probes outside the span are left out.
func TestTrafficCountsWhatTheEngineCounted(t *testing.T) {
	r := fixedRunner(t) // vllm-0: four good probes of 16 tokens ending at t0+1s, +13s, +25s, +37s, and a 500 at +49s
	s := r.replicas["vllm-0"]
	id, _ := s.reserve(t0.Add(50*time.Second), 16, 0.001, r.Window())
	withUsage := ok(40*time.Millisecond, 8*time.Millisecond)
	withUsage.PromptTokens = 19
	s.finish(id, withUsage, t0.Add(51*time.Second))
	tests := []struct {
		name     string
		from, to time.Time
		want     Traffic
	}{
		{"every good probe of the minute", t0, t0.Add(time.Minute), Traffic{Requests: 5, PromptTokens: 4*4 + 19, OutputTokens: 5 * 16}},
		{"only those that finished in the span", t0.Add(20 * time.Second), t0.Add(40 * time.Second), Traffic{Requests: 2, PromptTokens: 8, OutputTokens: 32}},
		{"the 500 is not counted", t0.Add(45 * time.Second), t0.Add(50 * time.Second), Traffic{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, known := r.Traffic("vllm-0", tt.from, tt.to)
			if !known || got != tt.want {
				t.Errorf("Traffic = %+v, %v; want %+v", got, known, tt.want)
			}
		})
	}
	if _, known := r.Traffic("nobody", t0, t0.Add(time.Minute)); known {
		t.Error("a replica that is not probed has traffic")
	}
}
