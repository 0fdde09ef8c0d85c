package detection

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kneewatch/kneewatch/rules"
)

// findings states what the numbers show, each computed from the results.
func (r *Report) findings(p func(string, ...any)) {
	p("## What the numbers show\n\n")
	// Where the SLO broke, in closed-loop headroom.
	var at []string
	lo, hi := math.Inf(1), math.Inf(-1)
	early := 0
	for _, res := range r.Results {
		for _, b := range res.Breaches {
			h := res.Truth[res.truthIndex(b.Start)].Headroom
			at = append(at, fmt.Sprintf("%d: %.2f", res.Scenario.ID, h))
			lo, hi = min(lo, h), max(hi, h)
			if h > 0.05 {
				early++
			}
		}
	}
	if len(at) > 0 {
		p("- **Open-loop traffic broke the SLO before the closed-loop knee in %d of %d breaches.** The true headroom (to the knee\n", early, len(at))
		p("  `sim.FindKnee` measures with a fixed number of clients) when each breach began: %s. Poisson\n", strings.Join(at, "; "))
		p("  arrivals bunch up: several prefills land in one engine step, the in-flight count swings around its mean,\n")
		p("  and the TPOT and TTFT tails of a p99 SLO feel that long before the mean load reaches the knee. A\n")
		p("  headroom accurate against the closed-loop knee (see the error table) therefore still reads %.0f%%–%.0f%%\n", 100*max(lo, 0), 100*hi)
		p("  at the moment the SLO breaks, which is why the shipped page arms its trend branch that high (%s).",
			pageText(rules.DefaultOptions().HeadroomExhausted))
		if knees := r.openLoopKnees(); len(knees) > 0 {
			p(" The largest steady Poisson load that kept the SLO (see the last what-if): %s.", strings.Join(knees, "; "))
		}
		p("\n")
	}
	if gain, quiet, ok := r.openLoopGain(); ok {
		p("- **Given a knee measured with open-loop traffic, the shipped page moves %s earlier** (median over the\n", human(gain.Round(time.Second)))
		if quiet {
			p("  breaches) and still never pages in the safe scenarios; its headroom then reads lower than the closed-loop\n")
		} else {
			p("  breaches) but pages in a safe scenario; its headroom then reads lower than the closed-loop\n")
		}
		p("  truth by design (error columns of that table).\n")
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
