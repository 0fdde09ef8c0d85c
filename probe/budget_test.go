package probe

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestTheBudgetSkipsProbesThatWouldPassTheCap(t *testing.T) {
	// cap 0.001 × 1000 tok/s = 1 token/s; over the 90 s window that is 90
	// tokens: five 16-token probes fit, the sixth does not.
	s := newReplicaState(Target{Replica: "r", KneeOutputTokensPerSecond: 1000})
	var sent []int
	for i := range 12 {
		now := t0.Add(time.Duration(i) * 10 * time.Second)
		if id, ok := s.reserve(now, 16, 0.001, 90*time.Second); ok {
			s.finish(id, Result{OutputTokens: 16}, now.Add(time.Second))
			sent = append(sent, i)
		}
	}
	// Probes at 0–40 s fill the budget (80 tokens) until the one at 0 s
	// leaves the window at 90 s; from then on each probe leaving makes room
	// for the next.
	want := []int{0, 1, 2, 3, 4, 9, 10, 11}
	if !slices.Equal(sent, want) || s.skipped[ReasonBudget] != 4 {
		t.Errorf("probes sent at slots %v (skipped %d), want %v", sent, s.skipped[ReasonBudget], want)
	}
}

func TestASmallKneeStretchesTheBudgetSpanToFitOneProbe(t *testing.T) {
	// cap 0.001 × 100 tok/s = 0.1 token/s: one 16-token probe needs 160 s.
	if got := budgetSpan(90*time.Second, 16, 0.001, 100); got != 160*time.Second {
		t.Fatalf("budget span %v, want 160s", got)
	}
	s := newReplicaState(Target{Replica: "r", KneeOutputTokensPerSecond: 100})
	var sent []time.Duration
	for at := time.Duration(0); at <= 400*time.Second; at += 30 * time.Second {
		if id, ok := s.reserve(t0.Add(at), 16, 0.001, 90*time.Second); ok {
			s.finish(id, Result{OutputTokens: 16}, t0.Add(at+time.Second))
			sent = append(sent, at)
		}
	}
	want := []time.Duration{0, 180 * time.Second, 360 * time.Second}
	if !slices.Equal(sent, want) {
		t.Errorf("probes sent at %v, want %v", sent, want)
	}
}

func TestAReplicaWithoutAKneeIsNeverProbed(t *testing.T) {
	for _, k := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		s := newReplicaState(Target{Replica: "r", KneeOutputTokensPerSecond: k})
		if _, ok := s.reserve(t0, 16, 0.001, time.Minute); ok || s.skipped[ReasonBudget] != 1 {
			t.Errorf("knee %v tok/s: probe allowed %v, budget skips %d; want skipped", k, ok, s.skipped[ReasonBudget])
		}
		if _, ok := s.loadRatioLocked(t0, 16, 0.001, time.Minute); ok {
			t.Errorf("knee %v tok/s: a load ratio was computed", k)
		}
	}
}

// TestTheLoadRatioNeverReadsAboveTheCap drives the budget with probes at
// random times returning random token counts and reads the exported ratio
// at random instants: it must never pass the cap.
func TestTheLoadRatioNeverReadsAboveTheCap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const loadCap, maxTokens, knee = 0.001, 16, 3000.0
	window := 90 * time.Second
	s := newReplicaState(Target{Replica: "r", KneeOutputTokensPerSecond: knee})
	now, highest, sent := t0, 0.0, 0
	for range 5000 {
		now = now.Add(time.Duration(rng.Float64() * float64(3*time.Second)))
		if id, ok := s.reserve(now, maxTokens, loadCap, window); ok {
			sent++
			s.finish(id, Result{OutputTokens: rng.IntN(maxTokens + 1)}, now.Add(500*time.Millisecond))
		}
		ratio, _ := s.loadRatioLocked(now.Add(time.Duration(rng.Float64()*float64(time.Second))), maxTokens, loadCap, window)
		highest = max(highest, ratio)
	}
	if highest > loadCap || sent == 0 {
		t.Errorf("highest load ratio %.6f over %d probes, cap %v", highest, sent, loadCap)
	}
	t.Logf("%d probes sent, highest load ratio %.6f (cap %v)", sent, highest, loadCap)
}
