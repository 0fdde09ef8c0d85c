package sim

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestActivitySharesCoverTheLastSecondOfSteps(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	// Two 100 ms steps, each 30 ms of compute and 80 ms of memory traffic
	// (so 80 ms of kernel time and 20 ms of overhead).
	step := func(start int) *StepResult {
		return &StepResult{Start: ms(start), End: ms(start + 100), Duration: 100 * time.Millisecond,
			ComputeTime: 30 * time.Millisecond, MemoryTime: 80 * time.Millisecond}
	}
	var a activity
	a.started = t0
	a.record(step(0))
	a.record(step(500))

	type shares struct{ Busy, Kernel, Compute, Memory float64 }
	get := func(now int) shares {
		s := a.sample(ms(now))
		return shares{s.busy, s.kernel, s.compute, s.memory}
	}
	approx := cmpopts.EquateApprox(0, 1e-9)
	tests := []struct {
		name string
		now  int
		want shares
	}{
		{"both steps inside the window", 1000, shares{0.2, 0.16, 0.06, 0.16}},
		{"a step still running counts up to now", 550, shares{0.15, 0.12, 0.045, 0.12}},
		{"the first step slid half out of the window", 1050, shares{0.15, 0.12, 0.045, 0.12}},
		{"both steps slid out", 1700, shares{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, get(tt.now), approx); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	s := a.sample(ms(2000))
	if s.totalKernel != 160*time.Millisecond || s.totalCompute != 60*time.Millisecond || math.Abs(s.uptime.Seconds()-2) > 1e-9 {
		t.Errorf("cumulative kernel %v compute %v uptime %v, want 160ms, 60ms, 2s", s.totalKernel, s.totalCompute, s.uptime)
	}
}

func TestActivityMergesShortBackToBackSteps(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var a activity
	a.started = t0
	// 100 000 steps of 10 µs back to back (a second of a very fast GPU),
	// each 4 µs compute and 6 µs memory: kernel 0.6, compute 0.4, memory 0.6.
	for i := range 100_000 {
		start := t0.Add(time.Duration(i) * 10 * time.Microsecond)
		a.record(&StepResult{Start: start, End: start.Add(10 * time.Microsecond), Duration: 10 * time.Microsecond,
			ComputeTime: 4 * time.Microsecond, MemoryTime: 6 * time.Microsecond})
	}
	if n := len(a.steps); n > 110 {
		t.Errorf("the window holds %d spans for a second of tiny steps, want about 100", n)
	}
	s := a.sample(t0.Add(time.Second))
	got := []float64{s.busy, s.kernel, s.compute, s.memory}
	if diff := cmp.Diff([]float64{1, 0.6, 0.4, 0.6}, got, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
		t.Errorf("busy, kernel, compute, memory (-want +got):\n%s", diff)
	}
}
