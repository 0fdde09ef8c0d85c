package detection

import (
	"slices"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// What the suite's goals are judged by (issue 13).
const (
	// earlyPossibleAhead: a breach is early-possible when the true headroom
	// had been below 0 for at least this long when it began: then a page
	// ahead of it was possible, whatever the rule.
	earlyPossibleAhead = 120 * time.Second
	// abruptGrace is how late a page may come after an abrupt onset.
	abruptGrace     = 60 * time.Second
	earlyGoalShare  = 0.95
	abruptGoalShare = 0.90
)

// earlyPossible reports whether the true headroom was below 0 throughout the
// earlyPossibleAhead before breach i of res began.
func (res *ScenarioResult) earlyPossible(i int) bool {
	b := res.Breaches[i]
	start := res.truthIndex(b.Start)
	for j := start; j >= 0; j-- {
		p := res.Truth[j]
		if p.Headroom >= 0 {
			return false
		}
		if b.Start.Sub(p.At) >= earlyPossibleAhead {
			return true
		}
	}
	return false
}

// breachOutcome is how one detector did on one breach.
type breachOutcome struct {
	earlyPossible bool
	// early: paged at least leadGoal before the breach; onTime: paged at
	// most abruptGrace after it began and no later than the raw burn rate.
	early, onTime bool
}

// outcomes judges detector key on every breach of res.
func (res *ScenarioResult) outcomes(key string) []breachOutcome {
	s, burn := res.score(key), res.score(DetectorRawBurn)
	out := make([]breachOutcome, len(res.Breaches))
	for i := range res.Breaches {
		o := breachOutcome{earlyPossible: res.earlyPossible(i)}
		if s.Caught[i] {
			o.early = s.Leads[i] >= leadGoal
			o.onTime = s.Leads[i] >= -abruptGrace && (!burn.Caught[i] || s.Leads[i] >= burn.Leads[i])
		}
		out[i] = o
	}
	return out
}

// tally sums a detector's outcomes over a set of scenarios.
type tally struct {
	scenarios, safe, safePaged, safeFalse, falsePages int
	hours                                             float64
	earlyPossible, early, abrupt, onTime, missed      int
	safeBreached, unknownTicks, ticks                 int
}

func tallyOf(results []*ScenarioResult, key string) tally {
	var t tally
	for _, res := range results {
		s := res.score(key)
		if s == nil {
			continue
		}
		t.scenarios++
		t.hours += res.Scenario.Duration.Hours()
		t.falsePages += s.FalsePages
		t.missed += s.Missed
		t.unknownTicks += res.UnknownTicks
		t.ticks += len(res.Truth)
		if res.Scenario.Safe {
			t.safe++
			t.safeFalse += s.FalsePages
			if s.FalsePages > 0 {
				t.safePaged++
			}
			if len(res.Breaches) > 0 {
				t.safeBreached++
			}
		}
		for _, o := range res.outcomes(key) {
			if o.earlyPossible {
				t.earlyPossible++
				if o.early {
					t.early++
				}
				continue
			}
			t.abrupt++
			if o.onTime {
				t.onTime++
			}
		}
	}
	return t
}

// errorStats pools headroom errors over scenarios.
type errorStats struct {
	mean, p95, max float64
	n              int
}

func pooledErrors(results []*ScenarioResult) errorStats {
	var all []float64
	for _, res := range results {
		all = append(all, res.HeadroomErrors...)
	}
	return statsOf(all)
}

// pooledResweepErrors pools the resweep what-if's headroom errors
// (Options.ResweepSeed); empty when it did not run.
func pooledResweepErrors(results []*ScenarioResult) errorStats {
	return pooledWhatIfErrors(results, func(res *ScenarioResult) *WhatIfResult { return res.Resweep })
}

// pooledWithoutModelsErrors pools the without-models what-if's headroom
// errors (Options.WithoutModelsWhatIf); empty when it did not run.
func pooledWithoutModelsErrors(results []*ScenarioResult) errorStats {
	return pooledWhatIfErrors(results, func(res *ScenarioResult) *WhatIfResult { return res.WithoutModels })
}

// pooledWhatIfErrors pools the headroom errors of the what-if of each
// result that which picks, over the results where it ran.
func pooledWhatIfErrors(results []*ScenarioResult, which func(*ScenarioResult) *WhatIfResult) errorStats {
	var all []float64
	for _, res := range results {
		if w := which(res); w != nil {
			all = append(all, w.Errors...)
		}
	}
	return statsOf(all)
}

func statsOf(all []float64) errorStats {
	if len(all) == 0 {
		return errorStats{}
	}
	slices.Sort(all)
	sum := 0.0
	for _, e := range all {
		sum += e
	}
	return errorStats{mean: sum / float64(len(all)), p95: knee.SampleQuantile(all, 0.95), max: all[len(all)-1], n: len(all)}
}

// share is n of d as a fraction, NaN when d is 0.
func share(n, d int) float64 {
	if d == 0 {
		return knee.Unknown()
	}
	return float64(n) / float64(d)
}
