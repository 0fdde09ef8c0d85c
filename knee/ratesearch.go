package knee

import "fmt"

// RateSearch decides which steady Poisson request rate to try next, as a
// fraction of the closed-loop knee's request rate. It tries Low first
// (which must keep the SLO: otherwise there is no open-loop knee to report),
// then 1 (the closed-loop knee's own rate), then bisects between the best
// kept fraction and the lowest broken one for Steps halvings. A kept 1 ends
// the search at once: the bisection never goes above the closed-loop
// knee, whose rate is what a replica sustains with its clients pacing
// themselves; Poisson bunching can only cost, not add.
//
// RateSearch is pure: it never measures anything itself.
type RateSearch struct {
	Low   float64
	Steps int

	trials int
	next   float64
	lo, hi float64 // best kept, lowest broken (0 while unknown)
	done   bool
	reason string
}

// NewRateSearch validates the settings and returns a search starting at low.
func NewRateSearch(low float64, steps int) (*RateSearch, error) {
	switch {
	case !(low > 0 && low < 1):
		return nil, fmt.Errorf("the open-loop search's low end must be in (0,1) of the closed-loop knee's rate, got %v", low)
	case steps < 0:
		return nil, fmt.Errorf("the open-loop search's halvings must be ≥ 0, got %d", steps)
	}
	return &RateSearch{Low: low, Steps: steps, next: low}, nil
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
	case s.trials == 1 && !kept:
		s.finish(fmt.Sprintf("the SLO breaks even at %g× the closed-loop knee's rate", f))
	case s.trials == 1:
		s.next = 1
	case s.trials == 2 && kept:
		s.finish("the SLO held at the closed-loop knee's rate")
	case s.trials-2 >= s.Steps:
		s.finish(fmt.Sprintf("after %d halvings the SLO held at %g× and broke at %g× the closed-loop knee's rate", s.Steps, s.lo, s.hi))
	default:
		s.next = (s.lo + s.hi) / 2
	}
}

// Best returns the highest fraction that kept the SLO (0 when none did).
func (s *RateSearch) Best() float64 { return s.lo }

// Done reports why the search ended ("" while it runs).
func (s *RateSearch) Done() string { return s.reason }

// MaxTrials is how many trials a full search runs: Low, 1 and the halvings.
func (s *RateSearch) MaxTrials() int { return 2 + s.Steps }

func (s *RateSearch) finish(reason string) { s.done, s.reason = true, reason }
