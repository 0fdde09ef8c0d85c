package knee

import (
	"fmt"
	"time"
)

// PoissonSearch is how a Poisson knee search runs: the settings of each
// steady-rate trial and of the RateSearch over them. The simulator and the
// sweep share it and keep their own defaults; a zero field takes the
// caller's default.
type PoissonSearch struct {
	// Warmup is run before a trial's SLO is judged, so the queue and the
	// KV cache reach their steady state.
	Warmup time.Duration
	// Steady is the judged part of a trial: long enough for Poisson
	// bunching to show its bad minutes.
	Steady time.Duration
	// Tick is how often in the steady part the windowed SLO is judged (a
	// scrape interval).
	Tick time.Duration
	// SLOWindow is the width of the windowed SLO percentiles.
	SLOWindow time.Duration
	// Low is the first rate tried, as a fraction of the closed-loop knee's
	// request rate, in (0,1). It must keep the SLO.
	Low float64
	// Steps is how many times the bracket [Low, 1] is halved after Low and 1.
	Steps int
}

// WithDefaults fills s's zero fields from d (the caller's defaults) and
// validates the result.
func (s PoissonSearch) WithDefaults(d PoissonSearch) (PoissonSearch, error) {
	for _, f := range []struct{ v, d *time.Duration }{
		{&s.Warmup, &d.Warmup}, {&s.Steady, &d.Steady}, {&s.Tick, &d.Tick}, {&s.SLOWindow, &d.SLOWindow},
	} {
		if *f.v == 0 {
			*f.v = *f.d
		}
	}
	if s.Low == 0 {
		s.Low = d.Low
	}
	if s.Steps == 0 {
		s.Steps = d.Steps
	}
	return s, s.Validate()
}

// Validate names the first bad setting. Zero means the caller's default
// and passes, so it serves before or after defaults are filled in; a tick
// longer than the steady part is caught once both are set.
func (s PoissonSearch) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"warmup", s.Warmup}, {"steady", s.Steady}, {"tick", s.Tick}, {"SLO window", s.SLOWindow}} {
		if d.v < 0 {
			return fmt.Errorf("open loop: %s must be ≥ 0 (0 = default), got %s", d.name, d.v)
		}
	}
	switch {
	case s.Low != 0 && !(s.Low > 0 && s.Low < 1): // NaN fails both comparisons
		return fmt.Errorf("open loop: low must be in (0,1) as a multiple of the rate the search starts from (0 = default), got %v", s.Low)
	case s.Steps < 0:
		return fmt.Errorf("open loop: steps must be ≥ 0 (0 = default), got %d", s.Steps)
	case s.Tick > 0 && s.Steady > 0 && s.Tick > s.Steady:
		return fmt.Errorf("open loop: tick %s is longer than the steady part %s, so the SLO would never be judged", s.Tick, s.Steady)
	}
	return nil
}

// RateSearch decides which steady Poisson request rate to try next, as a
// fraction of the closed-loop knee's request rate. It tries 1 (the
// closed-loop knee's own rate) first, then bisects between the best kept
// fraction (Low while none has kept) and the lowest broken one for Steps
// halvings. A kept 1 ends the search at once: the bisection never goes
// above the closed-loop knee, whose rate is what a replica sustains with
// its clients pacing themselves; Poisson bunching can only cost, not add.
//
// Low itself is tried only when no halving kept the SLO, last: a trial at
// a fifth of the knee's rate is the longest of all when trials are sized by
// the requests they need, and the bisection's first midpoint already tells
// whether the open-loop knee lies in the upper half, where it almost always
// does. When Low breaks too, there is no open-loop knee to report.
//
// RateSearch is pure: it never measures anything itself.
type RateSearch struct {
	Low   float64
	Steps int
	// Start names the rate the fractions are of, in Done's reasons: by
	// default the closed-loop knee's; a sweep that stopped its closed loop
	// soon after its first break starts from the rate sweep.OpenLoopStart picks.
	Start string

	trials     int
	next       float64
	lo, hi     float64 // best kept, lowest broken (0 while unknown)
	testingLow bool
	done       bool
	reason     string
}

// NewRateSearch validates the settings and returns a search starting at 1.
func NewRateSearch(low float64, steps int) (*RateSearch, error) {
	switch {
	case !(low > 0 && low < 1):
		return nil, fmt.Errorf("the open-loop search's low end must be in (0,1) of the closed-loop knee's rate, got %v", low)
	case steps < 0:
		return nil, fmt.Errorf("the open-loop search's halvings must be ≥ 0, got %d", steps)
	}
	return &RateSearch{Low: low, Steps: steps, Start: "the closed-loop knee's rate", next: 1}, nil
}

// Next returns the fraction to try next, or false when the search is over.
func (s *RateSearch) Next() (float64, bool) {
	if s.done {
		return 0, false
	}
	return s.next, true
}

// Record takes whether the fraction Next returned kept the SLO.
func (s *RateSearch) Record(kept bool) {
	f := s.next
	s.trials++
	if kept {
		s.lo = f
	} else {
		s.hi = f
	}
	switch {
	case s.testingLow && kept:
		s.finish(fmt.Sprintf("the SLO held only at the low end, %g× %s", f, s.Start))
	case s.testingLow:
		s.finish(fmt.Sprintf("the SLO breaks even at %g× %s", f, s.Start))
	case s.trials == 1 && kept:
		s.finish("the SLO held at " + s.Start)
	case s.trials-1 >= s.Steps && s.lo == 0:
		s.testingLow, s.next = true, s.Low
	case s.trials-1 >= s.Steps:
		s.finish(fmt.Sprintf("after %d halvings the SLO held at %g× and broke at %g× %s", s.Steps, s.lo, s.hi, s.Start))
	default:
		s.next = (max(s.lo, s.Low) + s.hi) / 2
	}
}

// Best returns the highest fraction that kept the SLO (0 when none did).
func (s *RateSearch) Best() float64 { return s.lo }

// Done reports why the search ended ("" while it runs).
func (s *RateSearch) Done() string { return s.reason }

// MaxTrials is how many trials a search runs at most: 1, the halvings and Low.
func (s *RateSearch) MaxTrials() int { return 2 + s.Steps }

func (s *RateSearch) finish(reason string) { s.done, s.reason = true, reason }
