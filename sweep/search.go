package sweep

import (
	"fmt"
	"math"
)

// MinGain is the throughput gain per doubling below which the doubling
// stops: the replica is saturated, and more concurrency buys only latency.
const MinGain = 0.05

// Search decides which concurrency to measure next. It doubles from 1
// until a level breaks the SLO (latency at the SLO quantile, or more than
// MaxErrorRate errors), gains less than MinGain throughput over the level
// before, or reaches MaxConcurrency. After a break it refines between the
// last good level (lo) and the first bad one (hi) until hi − lo is at most
// Precision × lo (or 1), probing where the SLO margin, interpolated between
// lo and hi, crosses 1. The interpolation is linear in log(margin): latency
// past a knee grows faster than linearly (queues form), and on the log
// scale a margin that doubles per step is a straight line, so the estimate
// is not dragged down to lo by the huge margin of a far-past level.
//
// The interpolated probe is kept at least max(1, Precision × lo) and an
// eighth of the bracket away from both ends. Near an end that makes the
// probe a closing move: if the outcome is the one interpolation expects,
// the bracket is then narrow enough. The eighth is the guard against the
// one-sidedness of regula falsi on a convex margin curve (TTFT explodes
// past the knee, so the first interpolation lands low).
//
// Search is pure: it never measures anything itself.
type Search struct {
	MaxConcurrency int
	Precision      float64
	// MaxLevels caps the levels measured (0 means no cap); the sweep then
	// stops with the bracket it has.
	MaxLevels int

	levels   int
	next     int
	lo, hi   int
	mlo, mhi float64
	lastTput float64
	done     bool
	reason   string
	// lowerBound: the search ended with every level meeting the SLO and
	// throughput still growing, so the true knee may lie higher.
	lowerBound bool
}

// NewSearch validates the settings and returns a search starting at 1.
func NewSearch(maxConcurrency int, precision float64, maxLevels int) (*Search, error) {
	switch {
	case maxConcurrency < 1:
		return nil, fmt.Errorf("max concurrency must be ≥ 1, got %d", maxConcurrency)
	case !(precision > 0 && precision < 1):
		return nil, fmt.Errorf("precision must be in (0,1), got %v", precision)
	case maxLevels < 0:
		return nil, fmt.Errorf("max levels must be ≥ 0, got %d", maxLevels)
	}
	return &Search{MaxConcurrency: maxConcurrency, Precision: precision, MaxLevels: maxLevels, next: 1}, nil
}

// Next returns the concurrency to measure next, or false when the search is over.
func (s *Search) Next() (int, bool) {
	if s.done {
		return 0, false
	}
	return s.next, true
}

// Done reports why the search ended ("" while it runs).
func (s *Search) Done() string { return s.reason }

// LowerBound reports whether the search ended with the SLO still met at the
// highest level and throughput still growing (--max-concurrency or the
// level budget): the knee found is then only a lower bound.
func (s *Search) LowerBound() bool { return s.lowerBound }

// Bracket returns the last good and first bad concurrency (0 when none).
func (s *Search) Bracket() (lo, hi int) { return s.lo, s.hi }

// Record takes the outcome of measuring concurrency c, which must be the
// value Next returned: whether it met the SLO, its SLO margin (see
// Level.Margin) and its output tokens/s.
func (s *Search) Record(c int, good bool, margin, tokensPerSecond float64) {
	s.levels++
	doubling := s.hi == 0
	if good {
		s.lo, s.mlo = c, margin
	} else {
		s.hi, s.mhi = c, margin
	}
	switch {
	case doubling && !good && s.lo == 0:
		s.finish(fmt.Sprintf("concurrency %d already breaks the SLO", c))
		return
	case doubling && good && s.lastTput > 0 && tokensPerSecond < s.lastTput*(1+MinGain):
		s.finish(fmt.Sprintf("saturated: output tokens/s gained %.1f%% from concurrency %d to %d (under %.0f%%)",
			100*(tokensPerSecond/s.lastTput-1), c/2, c, 100*MinGain))
		return
	case doubling && good && c >= s.MaxConcurrency:
		s.finish(fmt.Sprintf("reached --max-concurrency %d with the SLO still met", s.MaxConcurrency))
		s.lowerBound = true
		return
	case doubling && good:
		s.lastTput = tokensPerSecond
		s.next = min(2*c, s.MaxConcurrency)
		s.checkBudget()
		return
	}
	// Refining: hi is the first bad level, lo the last good one.
	width := s.width()
	if s.hi-s.lo <= width {
		s.finish(fmt.Sprintf("refined: the knee is in [%d, %d) (precision %g)", s.lo, s.hi, s.Precision))
		return
	}
	s.next = s.probe(width)
	s.checkBudget()
}

// width is the bracket width that ends the refinement.
func (s *Search) width() int {
	return max(1, int(math.Floor(s.Precision*float64(s.lo))))
}

func (s *Search) probe(width int) int {
	lo, hi := float64(s.lo), float64(s.hi)
	est := (lo + hi) / 2
	if s.mhi > 1 && s.mlo > 0 && s.mlo <= 1 && !math.IsInf(s.mhi, 0) {
		llo, lhi := math.Log(s.mlo), math.Log(s.mhi)
		est = lo + (0-llo)/(lhi-llo)*(hi-lo)
	}
	guard := max(float64(width), (hi-lo)/8)
	low, high := lo+guard, hi-guard
	if low > high {
		// Too narrow for both guards: probe at the closing distance above lo.
		return min(s.lo+width, s.hi-1)
	}
	p := int(math.Round(min(max(est, low), high)))
	return min(max(p, s.lo+1), s.hi-1)
}

func (s *Search) checkBudget() {
	if s.MaxLevels > 0 && s.levels >= s.MaxLevels {
		lo, hi := s.Bracket()
		if hi > 0 {
			s.finish(fmt.Sprintf("level budget of %d used up with the knee in [%d, %d)", s.MaxLevels, lo, hi))
		} else {
			s.finish(fmt.Sprintf("level budget of %d used up with the SLO still met at %d", s.MaxLevels, lo))
			s.lowerBound = true
		}
	}
}

func (s *Search) finish(reason string) {
	s.done, s.reason = true, reason
}
