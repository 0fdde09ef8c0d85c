package detection

import (
	"math"
	"slices"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// leadHorizon is how long before a breach a page still counts as a warning
// of it. An alert that starts earlier and is followed by nothing for this
// long is what an on-call calls a false page: they looked, found the
// replica healthy, and moved on.
const leadHorizon = 15 * time.Minute

// DetectorScore is how one detector did in one scenario.
type DetectorScore struct {
	Detector Detector
	// Firing lists the stretches during which the detector fired (any of
	// its alerts' instances), merged; an open one ends at the run's end.
	Firing []Episode
	// Pages are the starts of those stretches: the moments Alertmanager
	// would notify (it repeats a notification only hours later).
	Pages []time.Time
	// Leads holds, per breach episode, the time from the first page that
	// warned of it to the breach's start (negative when the page came after
	// the breach began); 0 where Caught is false.
	Leads []time.Duration
	// Caught is, per breach episode, whether a page warned of it.
	Caught []bool
	// FiringAtBreach is, per breach episode, whether the detector was
	// firing when it began (possibly from an earlier, false page).
	FiringAtBreach []bool
	Missed         int
	// FalsePages counts pages that did not start within leadHorizon before
	// a breach or during one.
	FalsePages int
	// QuietFiringShare is the share of the run outside every breach's
	// [start − leadHorizon, end] during which the detector fired.
	QuietFiringShare float64
}

// score judges a detector's firings against the breach episodes of a run
// that lasted from start to end.
func score(d Detector, firings []Firing, breaches []Episode, start, end time.Time) DetectorScore {
	s := DetectorScore{Detector: d, Firing: mergeFirings(firings, end)}
	for _, f := range s.Firing {
		s.Pages = append(s.Pages, f.Start)
	}
	warns := func(page time.Time, b Episode) bool {
		return !page.Before(b.Start.Add(-leadHorizon)) && !page.After(b.End)
	}
	for _, b := range breaches {
		caught, lead := false, time.Duration(0)
		for _, p := range s.Pages {
			if warns(p, b) {
				caught, lead = true, b.Start.Sub(p)
				break
			}
		}
		s.Leads = append(s.Leads, lead)
		s.Caught = append(s.Caught, caught)
		if !caught {
			s.Missed++
		}
		firing := false
		for _, f := range s.Firing {
			if !f.Start.After(b.Start) && f.End.After(b.Start) {
				firing = true
			}
		}
		s.FiringAtBreach = append(s.FiringAtBreach, firing)
	}
	for _, p := range s.Pages {
		if !slices.ContainsFunc(breaches, func(b Episode) bool { return warns(p, b) }) {
			s.FalsePages++
		}
	}
	// Quiet time: the run minus every breach's warning-and-breach span.
	var quiet, quietFiring time.Duration
	for t := start; t.Before(end); t = t.Add(time.Second) {
		inBreach := slices.ContainsFunc(breaches, func(b Episode) bool {
			return !t.Before(b.Start.Add(-leadHorizon)) && !t.After(b.End)
		})
		if inBreach {
			continue
		}
		quiet += time.Second
		if slices.ContainsFunc(s.Firing, func(f Episode) bool { return !t.Before(f.Start) && t.Before(f.End) }) {
			quietFiring += time.Second
		}
	}
	if quiet > 0 {
		s.QuietFiringShare = float64(quietFiring) / float64(quiet)
	}
	return s
}

// mergeFirings unions the firing stretches of every alert instance; a
// stretch still firing at the end of the run ends there.
func mergeFirings(fs []Firing, end time.Time) []Episode {
	eps := make([]Episode, 0, len(fs))
	for _, f := range fs {
		e := f.End
		if e.IsZero() {
			e = end
		}
		eps = append(eps, Episode{Start: f.Start, End: e})
	}
	slices.SortFunc(eps, func(a, b Episode) int { return a.Start.Compare(b.Start) })
	var out []Episode
	for _, e := range eps {
		if n := len(out); n > 0 && !e.Start.After(out[n-1].End) {
			if e.End.After(out[n-1].End) {
				out[n-1].End = e.End
			}
			continue
		}
		out = append(out, e)
	}
	return out
}

// HeadroomError compares kneewatch's inferred headroom with the true one at
// every scrape after the first full window. Both are clamped to [0, 1]
// first: past the knee the true headroom of an open-loop replica falls
// without bound as its queue grows, and any negative value means the same
// thing to an on-call (past the knee); under the knee the number is what
// capacity decisions are made on.
type HeadroomError struct {
	Mean, Max float64
	// P95 is the 95th percentile of the errors, and WithinGoal the share
	// of compared scrapes whose error was at most headroomGoal.
	P95, WithinGoal float64
	// MaxAt is when the largest error was seen.
	MaxAt time.Time
	// Samples were compared; Unknown scrapes had no inferred headroom
	// (evaluation not ok).
	Samples, Unknown int
}

func headroomError(inferred []float64, truth []TruthPoint, skip int) HeadroomError {
	var e HeadroomError
	var sum float64
	var errs []float64
	for i := skip; i < len(truth) && i < len(inferred); i++ {
		if !knee.Known(inferred[i]) {
			e.Unknown++
			continue
		}
		d := math.Abs(clamp01(inferred[i]) - clamp01(truth[i].Headroom))
		sum += d
		errs = append(errs, d)
		if d <= headroomGoal {
			e.WithinGoal++
		}
		e.Samples++
		if d > e.Max {
			e.Max, e.MaxAt = d, truth[i].At
		}
	}
	if e.Samples > 0 {
		e.Mean = sum / float64(e.Samples)
		e.WithinGoal /= float64(e.Samples)
		slices.Sort(errs)
		e.P95 = knee.SampleQuantile(errs, 0.95)
	}
	return e
}

// headroomErrors are the errors headroomError summarizes, in time order.
func headroomErrors(inferred []float64, truth []TruthPoint, skip int) []float64 {
	compared := comparedHeadrooms(inferred, truth, skip)
	errs := make([]float64, 0, len(compared))
	for _, c := range compared {
		errs = append(errs, math.Abs(c.Inferred-c.Truth))
	}
	return errs
}

func clamp01(v float64) float64 { return min(max(v, 0), 1) }

// ComparedHeadroom is one compared scrape: kneewatch's headroom and the
// true one, both clamped to [0, 1] as headroomError compares them.
type ComparedHeadroom struct{ Inferred, Truth float64 }

// comparedHeadrooms are the scrapes headroomErrors compares, in time order.
func comparedHeadrooms(inferred []float64, truth []TruthPoint, skip int) []ComparedHeadroom {
	var out []ComparedHeadroom
	for i := skip; i < len(truth) && i < len(inferred); i++ {
		if knee.Known(inferred[i]) {
			out = append(out, ComparedHeadroom{Inferred: clamp01(inferred[i]), Truth: clamp01(truth[i].Headroom)})
		}
	}
	return out
}

// nearKnee is the true headroom at or under which a scrape counts as near
// the knee in the direction table: where the page is decided.
const nearKnee = 0.3

// errorDirection says which way the headroom errors of some scrapes lean.
// An error reading headroom lower than the truth costs a false page near
// the knee and nothing far from it; one reading higher costs a late page.
type errorDirection struct {
	n, over int // scrapes, and those whose error exceeds headroomGoal
	// overLow of the over-goal errors read headroom lower than the truth.
	overLow int
	// overFar of the over-goal errors were at a true headroom above nearKnee.
	overFar int
	// near pools the errors where the true headroom is at most nearKnee,
	// and nearHigh those of them that read headroom higher than the truth:
	// the late-page side.
	near, nearHigh errorStats
}

func directionOf(results []*ScenarioResult) errorDirection {
	var d errorDirection
	var near, nearHigh []float64
	for _, res := range results {
		for _, c := range res.HeadroomCompared {
			d.n++
			e := c.Inferred - c.Truth
			if c.Truth <= nearKnee {
				near = append(near, math.Abs(e))
				if e > 0 {
					nearHigh = append(nearHigh, e)
				}
			}
			if math.Abs(e) <= headroomGoal {
				continue
			}
			d.over++
			if e < 0 {
				d.overLow++
			}
			if c.Truth > nearKnee {
				d.overFar++
			}
		}
	}
	d.near, d.nearHigh = statsOf(near), statsOf(nearHigh)
	return d
}
