package measure

import (
	"fmt"
	"math"
	"slices"
)

// MinGain is the throughput gain per doubling below which a search with
// StopWhenSaturated stops doubling: the replica is saturated, and more
// concurrency buys only latency.
const MinGain = 0.05

// Step is what a Search asks to measure next.
type Step struct {
	Concurrency int
	// MayScreen says the level may stop on a screening window (see Screen):
	// only levels of the doubling phase may, because a later level meeting
	// the SLO in full confirms them by monotonicity (latency does not fall
	// as concurrency rises). A level the knee would rest on is never
	// screened: it is measured again in full first. A search that stops
	// after its first break (StopAtBreak) confirms nothing, and may screen
	// its probes too.
	MayScreen bool
	// Confirm is set when the level was screened before and is now
	// measured in full because the knee rests on it.
	Confirm bool
}

// Outcome is what measuring one level told the search.
type Outcome struct {
	// Good: the level met the SLO (latency at the SLO quantile, and the
	// error budget).
	Good bool
	// Margin is the larger of TTFT ÷ its threshold and TPOT ÷ its
	// threshold at the SLO quantile (see Summary.Margin).
	Margin float64
	// TokensPerSecond is the level's output tokens/s.
	TokensPerSecond float64
	// Screened: the level stopped on a screening window, so Good is
	// provisional until a higher level meets the SLO in full.
	Screened bool
}

// Search decides which concurrency to measure next. It doubles from 1
// until a level breaks the SLO, gains less than MinGain throughput over the
// level before (with StopWhenSaturated), or reaches MaxConcurrency. With
// PastBreak it measures that many more doublings past the first break, so
// the profile shows the flattening. Then it refines between the last good
// level (lo) and the first bad one (hi) until hi − lo is at most
// max(1, ⌊Precision × lo⌋), probing where the SLO margin, interpolated
// between lo and hi, crosses 1. The interpolation is linear in
// log(margin): latency past a knee grows faster than linearly (queues
// form), and on the log scale a margin that doubles per step is a straight
// line, so the estimate is not dragged down to lo by the huge margin of a
// far-past level.
//
// The interpolated probe is kept at least max(1, Precision × lo) and an
// eighth of the bracket away from both ends. Near an end that makes the
// probe a closing move: if the outcome is the one interpolation expects,
// the bracket is then narrow enough. The eighth is the guard against the
// one-sidedness of regula falsi on a convex margin curve (TTFT explodes
// past the knee, so the first interpolation lands low).
//
// A level recorded as Screened counts as good for the doubling; if the
// search would end with the knee on it, it is measured again in full
// (Step.Confirm), and a confirmation that breaks the SLO moves hi down to
// it and refines below. So the knee always rests on a level measured in
// full.
//
// How many probes the refinement takes depends on its verdicts. No search
// can promise fewer than the minimax over probes (3 for a doubling's
// bracket [8, 16) at precision 0.1, 4 for [16, 32), 3 for [64, 128)), and
// this one can take more when noise near the knee misleads the
// interpolation: driven with random margins and a coin-flip verdict at
// the knee, 2026-12-06, it took up to 3 more (113 of 14,880 searches; 2
// more in 3,858). Keeping each probe where either verdict leaves a bracket
// the remaining budget can close caps that, but it took the typical case
// with it: with no slack the 8B short-answer case of sweep's accuracy test
// took 8 levels in all 40 seeds instead of 6 in 29 of them, one slack
// level let one 70B seed take 11, and two changed nothing measured. So it
// is not done.
//
// A longer step far below the knee was measured and not kept (make
// bench-sweep with a scratch setting, 2026-12-07): ×4 instead of ×2 after a
// good level whose margin, growing per doubling as it last grew, would
// still be under 0.5 two doublings on. The full closed-loop searches took
// 8% less time on each half (summed, A 355 → 328 min, B 281 → 259), every
// knee the same but 8B/L4 chat loose's (94 → 98, out of ±10% of the
// truth's 86). But the Poisson sweeps start from the first broken level,
// which moved, and one sweep's knee of a slow deployment moves with its
// start: half A's within ±10% went 9 → 8 of 14 (8B/L4 code loose −2% →
// +14%), and the 70B/H200 code sweep that is over 20 min went 22m36s →
// 20m45s. Under 0.8 it was 19m52s, but half B's Poisson knees within ±10%
// went 11 → 10 and its closed loops took 1% longer. ×4 whenever the margin
// was under 0.3: 8B/L4 summarize loose's closed loop went 59m → 1h31m,
// its break at 16 leaving the bracket [4, 16) to refine.
//
// Search is pure: it never measures anything itself. Both `kneewatch sweep`
// (HTTP against an endpoint) and the simulator's FindKnee (virtual time)
// drive it, so the knee is searched for by one rule.
type Search struct {
	MaxConcurrency int
	Precision      float64
	// MaxLevels caps the levels measured (0 means no cap); the search then
	// stops with the bracket it has.
	MaxLevels int
	// StopWhenSaturated ends the doubling at a good level that gained less
	// than MinGain throughput over the one before (a sweep against a real
	// endpoint saves its time; the simulator's truth keeps going).
	StopWhenSaturated bool
	// PastBreak more doubling levels are measured after the first break.
	PastBreak int
	// StopAtBreak ends the search soon after the doubling's first break:
	// after at most BreakProbes refinement levels, and with no confirmation
	// of a screened level. A Poisson search needs only a load above the
	// knee to start its rates from, and the refinement's levels near the
	// knee are the slowest to judge (see Estimate for the knee it leaves).
	StopAtBreak bool
	BreakProbes int

	levels   int
	next     Step
	lo, hi   int
	mlo, mhi float64
	lastTput float64
	pastLeft int
	// probesLeft counts down BreakProbes after the first break.
	probesLeft int
	done       bool
	reason     string
	// lowerBound: the search ended with every level meeting the SLO and
	// throughput still growing, so the true knee may lie higher.
	lowerBound bool
	// good holds every good level's margin; screened the good ones judged
	// on a screening window only.
	good     map[int]float64
	screened map[int]bool
	// pending is the reason the search will finish with once the knee's
	// level is confirmed.
	pending struct {
		reason     string
		lowerBound bool
	}
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
	return &Search{
		MaxConcurrency: maxConcurrency, Precision: precision, MaxLevels: maxLevels,
		next: Step{Concurrency: 1, MayScreen: true}, good: map[int]float64{}, screened: map[int]bool{},
	}, nil
}

// Next returns the level to measure next, or false when the search is over.
func (s *Search) Next() (Step, bool) {
	if s.done {
		return Step{}, false
	}
	return s.next, true
}

// Done reports why the search ended ("" while it runs).
func (s *Search) Done() string { return s.reason }

// LowerBound reports whether the search ended with the SLO still met at the
// highest level and throughput still growing (the concurrency cap or the
// level budget): the knee found is then only a lower bound.
func (s *Search) LowerBound() bool { return s.lowerBound }

// Bracket returns the last good and first bad concurrency (0 when none).
func (s *Search) Bracket() (lo, hi int) { return s.lo, s.hi }

// KneeScreened reports whether the search ended (on its level budget) with
// the knee resting on a level judged on a screening window only.
func (s *Search) KneeScreened() bool { return s.lo > 0 && s.screened[s.lo] }

// Record takes the outcome of measuring the level Next returned.
func (s *Search) Record(c int, o Outcome) {
	s.levels++
	confirming := s.next.Confirm
	if o.Good {
		s.good[c] = o.Margin
		if o.Screened {
			s.screened[c] = true
		} else {
			delete(s.screened, c)
		}
	} else {
		delete(s.good, c)
		delete(s.screened, c)
	}
	if confirming {
		s.recordConfirmation(c, o)
		return
	}
	if s.pastLeft > 0 {
		// Measuring past the first break: only the curve needs these, and
		// their verdicts do not move the bracket.
		s.pastLeft--
		if s.pastLeft > 0 && c < s.MaxConcurrency {
			s.next = Step{Concurrency: min(2*c, s.MaxConcurrency)}
			s.checkBudget()
			return
		}
		s.pastLeft = 0
		s.afterBreak()
		return
	}
	doubling := s.hi == 0
	if o.Good {
		s.lo, s.mlo = c, o.Margin
	} else {
		s.hi, s.mhi = c, o.Margin
	}
	switch {
	case doubling && !o.Good && s.PastBreak > 0 && c < s.MaxConcurrency:
		// The levels past a break are above the knee: they need no
		// screening rule, they are measured only for the curve.
		s.pastLeft = s.PastBreak
		s.next = Step{Concurrency: min(2*c, s.MaxConcurrency)}
		s.checkBudget()
		return
	case !doubling && s.StopAtBreak:
		s.probeOrStop()
		return
	case doubling && !o.Good:
		s.afterBreak()
		return
	case doubling && o.Good && s.StopWhenSaturated && s.lastTput > 0 && o.TokensPerSecond < s.lastTput*(1+MinGain):
		s.finish(fmt.Sprintf("saturated: output tokens/s gained %.1f%% from concurrency %d to %d (under %.0f%%)",
			100*(o.TokensPerSecond/s.lastTput-1), c/2, c, 100*MinGain), false)
		return
	case doubling && o.Good && c >= s.MaxConcurrency:
		s.finish(fmt.Sprintf("reached --max-concurrency %d with the SLO still met", s.MaxConcurrency), true)
		return
	case doubling && o.Good:
		s.lastTput = o.TokensPerSecond
		s.next = Step{Concurrency: min(2*c, s.MaxConcurrency), MayScreen: true}
		s.checkBudget()
		return
	}
	s.refine()
}

// probeOrStop follows the first break when the search stops there: one
// more refinement level while BreakProbes allow and the bracket is wider
// than the precision, else the end.
func (s *Search) probeOrStop() {
	width := s.width()
	if s.probesLeft == 0 || s.hi-s.lo <= width {
		s.done, s.reason = true, fmt.Sprintf("stopped after the first break: the knee is in [%d, %d), about %.3g", s.lo, s.hi, s.Estimate())
		return
	}
	s.probesLeft--
	s.next = Step{Concurrency: s.probe(width), MayScreen: true}
	s.checkBudget()
}

// afterBreak follows the doubling's first break (and the levels past it).
func (s *Search) afterBreak() {
	if s.lo == 0 {
		s.finish(fmt.Sprintf("concurrency %d already breaks the SLO", s.hi), false)
		return
	}
	if s.StopAtBreak {
		s.probesLeft = s.BreakProbes
		s.probeOrStop()
		return
	}
	s.refine()
}

func (s *Search) refine() {
	width := s.width()
	if s.hi-s.lo <= width {
		s.finish(fmt.Sprintf("refined: the knee is in [%d, %d) (precision %g)", s.lo, s.hi, s.Precision), false)
		return
	}
	s.next = Step{Concurrency: s.probe(width)}
	s.checkBudget()
}

// recordConfirmation takes the full measurement of a screened level the
// knee rested on.
func (s *Search) recordConfirmation(c int, o Outcome) {
	if o.Good {
		s.mlo = o.Margin
		s.finish(s.pending.reason, s.pending.lowerBound)
		return
	}
	// The screening was wrong: the knee is below c.
	s.hi, s.mhi = c, o.Margin
	s.lo, s.mlo = 0, 0
	for g, m := range s.good {
		if g < c && g > s.lo {
			s.lo, s.mlo = g, m
		}
	}
	if s.lo == 0 {
		s.finish(fmt.Sprintf("concurrency %d breaks the SLO when measured in full", c), false)
		return
	}
	s.refine()
}

// width is the bracket width that ends the refinement.
func (s *Search) width() int {
	return max(1, int(math.Floor(s.Precision*float64(s.lo))))
}

// Estimate is where the SLO margin crosses 1 between the bracket's ends,
// interpolated in log(margin) as the refinement's probes are: the knee a
// search that stopped at its first break leaves (within [lo, hi)), the
// midpoint when a margin is unusable, and lo when nothing broke.
func (s *Search) Estimate() float64 {
	if s.hi == 0 || s.lo == 0 {
		return float64(s.lo)
	}
	lo, hi := float64(s.lo), float64(s.hi)
	est := (lo + hi) / 2
	if s.mhi > 1 && s.mlo > 0 && s.mlo <= 1 && !math.IsInf(s.mhi, 0) {
		llo, lhi := math.Log(s.mlo), math.Log(s.mhi)
		est = lo + (0-llo)/(lhi-llo)*(hi-lo)
	}
	return est
}

func (s *Search) probe(width int) int {
	lo, hi := float64(s.lo), float64(s.hi)
	est := s.Estimate()
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
		note := ""
		if s.KneeScreened() {
			note = " (that level was screened only)"
		}
		s.done, s.lowerBound = true, hi == 0
		if hi > 0 {
			s.reason = fmt.Sprintf("level budget of %d used up with the knee in [%d, %d)%s", s.MaxLevels, lo, hi, note)
		} else {
			s.reason = fmt.Sprintf("level budget of %d used up with the SLO still met at %d%s", s.MaxLevels, lo, note)
		}
	}
}

// finish ends the search, unless the knee rests on a screened level: that
// is measured in full first.
func (s *Search) finish(reason string, lowerBound bool) {
	if s.lo > 0 && s.screened[s.lo] && !(s.MaxLevels > 0 && s.levels >= s.MaxLevels) {
		s.pending.reason, s.pending.lowerBound = reason, lowerBound
		s.next = Step{Concurrency: s.lo, Confirm: true}
		return
	}
	if s.lo > 0 && s.screened[s.lo] {
		reason += " (that level was screened only: the level budget ran out before it could be measured in full)"
	}
	s.done, s.reason, s.lowerBound = true, reason, lowerBound
}

// Screened lists the levels whose good verdict rests on a screening window
// and on a higher level meeting the SLO in full, ascending.
func (s *Search) Screened() []int {
	var out []int
	for c := range s.screened {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}
