package detection

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// findings states what the numbers show, each computed from the results.
func (r *Report) findings(p func(string, ...any)) {
	p("## What the numbers show\n\n")
	if knees := r.poissonKnees(); len(knees) > 0 {
		p("- **A closed-loop knee overstates what open traffic can be given.** The largest steady Poisson load that\n")
		p("  kept the SLO: %s. Poisson arrivals bunch up: several prefills land in one engine step, the in-flight\n", strings.Join(knees, "; "))
		p("  count swings around its mean, and the TPOT and TTFT tails of a p99 SLO feel that well before the mean\n")
		p("  load reaches the closed-loop knee. kneewatch is given the Poisson knee, as `kneewatch sweep --arrivals\n")
		p("  poisson` measures it, and the truth is judged against it.\n")
	}
	if loss, late, quiet, ok := r.closedLoopLoss(); ok {
		p("- **Given the closed-loop knee instead, the shipped page comes %s later** (median over the breaches),\n", human(loss.Round(time.Second)))
		p("  after the breach began or not at all in %d of %d breaches, ", late, r.breachCount())
		if quiet {
			p("and still quiet in the safe scenarios (closed-loop what-if table).\n")
		} else {
			p("and it pages in a safe scenario (closed-loop what-if table).\n")
		}
	}
	// Where the SLO broke, in true headroom.
	var at []string
	for _, res := range r.Results {
		for _, b := range res.Breaches {
			at = append(at, fmt.Sprintf("%d: %.2f", res.Scenario.ID, res.Truth[res.truthIndex(b.Start)].Headroom))
		}
	}
	if len(at) > 0 {
		p("- **On a ramp the SLO breaks after the knee is crossed.** The true headroom when each breach began:\n")
		p("  %s. The knee is the load a replica holds for %s without a window breaking; a ramp passes it\n", strings.Join(at, "; "), human(poissonSteady))
		p("  before the queue it starts building pushes a %s percentile over the threshold, longest at the\n", human(r.Options.SLOWindow))
		p("  low request rates of long contexts.\n")
	}
	// The page against the burn rate, breach by breach.
	var ahead, compared []string
	for _, res := range r.Results {
		kw, burn := res.score(DetectorKneewatchPage), res.score(DetectorRawBurn)
		for i := range res.Breaches {
			if !kw.Caught[i] || !burn.Caught[i] {
				continue
			}
			compared = append(compared, fmt.Sprintf("%d", res.Scenario.ID))
			if kw.Leads[i] > burn.Leads[i] {
				ahead = append(ahead, fmt.Sprintf("%d (by %s)", res.Scenario.ID, human((kw.Leads[i]-burn.Leads[i]).Round(time.Second))))
			}
		}
	}
	if len(compared) > 0 {
		p("- **kneewatch's page against a burn-rate page.** With its default options kneewatch's page came before\n")
		p("  the raw burn-rate page in %d of %d breaches", len(ahead), len(compared))
		if len(ahead) > 0 {
			p(": %s", strings.Join(ahead, ", "))
		}
		p(".")
		if quietVariants := r.quietVariants(); len(quietVariants) > 0 {
			p(" Page what-ifs that never paged in the safe scenarios: %s (what-if table).", strings.Join(quietVariants, ", "))
		}
		p("\n")
	}
	// The baselines' false pages.
	var gpuFalse, satFalse, quietShare []string
	for _, res := range r.Results {
		if g := res.score(DetectorGPUUtil); g.FalsePages > 0 {
			gpuFalse = append(gpuFalse, fmt.Sprintf("%d", res.Scenario.ID))
			quietShare = append(quietShare, fmt.Sprintf("%.0f%%", 100*g.QuietFiringShare))
		}
		if s := res.score(DetectorSaturation); s.FalsePages > 0 {
			satFalse = append(satFalse, fmt.Sprintf("%d", res.Scenario.ID))
		}
	}
	if len(gpuFalse) > 0 {
		p("- **GPU utilization pages on healthy replicas.** A continuous-batching engine steps back to back whenever\n")
		p("  anything is in flight, so DCGM reports ~100%% at a third of the knee's request rate: false pages in\n")
		p("  scenarios %s, firing %s of the quiet time there.\n", strings.Join(gpuFalse, ", "), strings.Join(quietShare, ", "))
	}
	// KV stays low in the prefill wave.
	for _, res := range r.Results {
		if res.Scenario.ID != 2 {
			continue
		}
		kv := 0.0
		for i := range res.Evaluations {
			if i < len(res.Truth) && !res.Truth[i].At.After(res.firstBreach()) {
				kv = max(kv, res.Evaluations[i].KVPressure+res.Evaluations[i].Knee.KVCacheUsage)
			}
		}
		sat := res.score(DetectorSaturation)
		p("- **The saturation thresholds miss prefill-heavy saturation.** In the prefill wave the KV cache was at most\n")
		p("  %.0f%% full (window mean) up to the breach; `KV ≥ 0.8 or queue ≥ 5` paged %s.\n", 100*kv, cellLead(sat))
	}
	satLate, satCaught := true, 0
	for _, res := range r.Results {
		s := res.score(DetectorSaturation)
		for i, c := range s.Caught {
			if c {
				satCaught++
				satLate = satLate && s.Leads[i] <= 0
			}
		}
	}
	if len(satFalse) == 0 && satCaught > 0 && satLate {
		p("- **The saturation thresholds never paged early:** every page of `KV ≥ 0.8 or queue ≥ 5` came after the\n")
		p("  breach had begun: the queue only forms once the running batch is full, past the point where the\n")
		p("  latency tail broke.\n")
	}
	p("\n")
}

// firstBreach is when the scenario's first breach began, or its end.
func (res *ScenarioResult) firstBreach() time.Time {
	if len(res.Breaches) > 0 {
		return res.Breaches[0].Start
	}
	return benchEpoch.Add(res.Scenario.Duration)
}

// cellLead describes a detector's first lead in prose.
func cellLead(s *DetectorScore) string {
	if len(s.Caught) == 0 || !s.Caught[0] {
		return "not at all"
	}
	if s.Leads[0] >= 0 {
		return fmt.Sprintf("%s before the breach", human(s.Leads[0]))
	}
	return fmt.Sprintf("%s after the breach began", human(-s.Leads[0]))
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// breachCount is the number of breaches over all scenarios.
func (r *Report) breachCount() int {
	n := 0
	for _, res := range r.Results {
		n += len(res.Breaches)
	}
	return n
}
