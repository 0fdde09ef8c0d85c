package detection

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

func sloText(s knee.SLO) string {
	return fmt.Sprintf("p%g TTFT ≤ %s, TPOT ≤ %s", s.Quantile*100, s.TTFT.D(), s.TPOT.D())
}

func (r *Report) scenarioTable(p func(string, ...any)) {
	p("## Scenarios\n\n")
	p("Every replica is the simulator's `%s` preset (Llama-3.1-8B on one H100). Load is the open-loop arrival\n", chatDeployment.Preset)
	p("rate as a multiple of the knee's rate. \"Knee\" is the true knee under nominal conditions, measured with\n")
	p("Poisson arrivals (see Method): mean requests in flight and arrival rate. It is also the profile kneewatch is\n")
	p("given; \"true headroom at breach\" is 1 − load ÷ the true knee for the conditions of that moment.\n\n")
	p("| # | scenario | what happens | workload, SLO | knee: in flight (req/s) | breaches | true / kneewatch headroom at breach |\n")
	p("|---|---|---|---|---|---|---|\n")
	for _, res := range r.Results {
		sc := res.Scenario
		var breaches, at []string
		for _, b := range res.Breaches {
			breaches = append(breaches, clock(b.Start)+"–"+clock(b.End))
			i := res.truthIndex(b.Start)
			at = append(at, fmt.Sprintf("%.2f / %.2f", res.Truth[i].Headroom, res.Inferred[i]))
		}
		if len(breaches) == 0 {
			breaches, at = []string{"none"}, []string{"—"}
		}
		p("| %d | %s | %s | %s, %s | %.1f (%.2f) | %s | %s |\n", sc.ID, sc.Name, sc.Description, sc.Deployment.Workload,
			sloText(sc.Deployment.SLO), res.Profile.Knee.Concurrency, res.KneeRate, strings.Join(breaches, ", "), strings.Join(at, ", "))
	}
	p("\n")
}

// truthIndex is the index of the truth point at t (a scrape tick).
func (res *ScenarioResult) truthIndex(t time.Time) int {
	i, _ := slices.BinarySearchFunc(res.Truth, t, func(p TruthPoint, t time.Time) int { return p.At.Compare(t) })
	return min(i, len(res.Truth)-1)
}

func (r *Report) detectorTable(p func(string, ...any)) {
	p("## Detectors\n\n")
	p("| detector | source | rule |\n|---|---|---|\n")
	for _, d := range r.detectors(true) {
		src := "baseline, written by the bench"
		switch {
		case d.Variant:
			src = "what-if: kneewatch's generated rule, other options"
		case d.Shipped:
			src = "kneewatch, `rules.Generate(rules.DefaultOptions())`"
		}
		p("| %s | %s | %s |\n", d.Name, src, d.Basis)
	}
	p("\n")
}

func (r *Report) detailTable(p func(string, ...any)) {
	p("## Detail\n\n")
	p("Pages are the moments an alert starts firing; \"firing while quiet\" is the share of the time outside every\n")
	p("breach and the %s before it during which the detector fired.\n\n", human(leadHorizon))
	p("| scenario | detector | pages at | breaches caught | lead | false pages | firing while quiet |\n")
	p("|---|---|---|---|---|---|---|\n")
	for _, res := range r.Results {
		for _, d := range r.detectors(false) {
			s := res.score(d.Key)
			var pages, leads []string
			for _, pg := range s.Pages {
				pages = append(pages, clock(pg))
			}
			caught := 0
			for i, c := range s.Caught {
				if c {
					caught++
					leads = append(leads, leadText(s.Leads[i]))
				}
			}
			p("| %d %s | %s | %s | %d of %d | %s | %d | %.0f%% |\n", res.Scenario.ID, res.Scenario.Name, d.Name,
				orDash(strings.Join(pages, ", ")), caught, len(res.Breaches), orDash(strings.Join(leads, ", ")),
				s.FalsePages, 100*s.QuietFiringShare)
		}
	}
	p("\n")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func (r *Report) headroomTable(p func(string, ...any)) {
	p("## kneewatch's headroom against the truth\n\n")
	p("At every scrape after the first window, |kneewatch's exported headroom − the true headroom|, both clamped\n")
	p("to [0, 1] (past the knee any negative value means the same thing; under it the number is what capacity is\n")
	p("planned on).\n\n")
	p("| scenario | mean error | 95th percentile | max error (at) | scrapes within %.1f | scrapes compared | scrapes without a headroom |\n|---|---|---|---|---|---|---|\n", headroomGoal)
	for _, res := range r.Results {
		e := res.Headroom
		p("| %d %s | %.3f | %.3f | %.3f (%s) | %.1f%% | %d | %d |\n", res.Scenario.ID, res.Scenario.Name, e.Mean, e.P95, e.Max, clock(e.MaxAt),
			100*e.WithinGoal, e.Samples, e.Unknown)
	}
	p("\n")
}

func (r *Report) method(p func(string, ...any)) {
	o := r.Options
	p("## Method\n\n")
	p("- **Traffic.** Open-loop Poisson arrivals at the scripted rate, request lengths drawn from the workload\n")
	p("  presets (a share from a second mix in scenario 7). Open loop because users keep sending whether or not\n")
	p("  the replica keeps up: past the knee the queue grows and TTFT climbs, which is how breaches happen. A\n")
	p("  closed loop would throttle itself at the knee and hide exactly that.\n")
	p("- **Series.** Every %s: the replica's vLLM V1 series (names, labels and bucket edges as vLLM's), recorded\n", human(o.ScrapeInterval))
	p("  from engine events at the virtual time they happen; DCGM's `DCGM_FI_DEV_GPU_UTIL` (the busy share of the\n")
	p("  last second, as the simulator's DCGM endpoint reports it); and kneewatch's own `/metrics` after it evaluated\n")
	p("  the same scrapes (window %s). All go through the text exposition, with target labels and staleness\n", human(o.Window))
	p("  markers as Prometheus's scrape loop adds them.\n")
	p("- **Ground truth.** A breach is a scrape at which the SLO percentile of TTFT (requests whose first token\n")
	p("  came in the last %s) or of TPOT (requests that finished in it) is over its threshold; when the window\n", human(o.SLOWindow))
	p("  holds fewer than %d requests it reaches back to the last %d, however far back they lie, so every moment is\n",
		knee.MinWindowRequests, knee.MinWindowRequests)
	p("  judged once the run has produced that many (the scrapes before are counted as unknown). Breached scrapes less than %s\n", human(breachMergeGap))
	p("  apart are one breach. True headroom is 1 − load ÷ the true knee, load being the exact mean of running +\n")
	p("  waiting requests over the last %s, the knee the one for the conditions of the moment (measured on a\n", human(o.Window))
	p("  grid of slowdowns and mix shares and interpolated in 1/knee).\n")
	p("- **True knee.** Measured the way the traffic arrives, by `sim.FindKnee` with Poisson arrivals (`kneewatch\n")
	p("  sim knee --arrivals poisson`): after the closed-loop search (fixed clients), the largest steady Poisson\n")
	p("  load that kept both SLO percentiles, judged as breaches are, at every scrape of a %s run after %s\n", human(poissonSteady), human(poissonWarmup))
	p("  of warm-up, bisected between %.1f× and 1× the closed-loop knee's rate to %d halvings; its concurrency is\n", poissonLow, poissonSteps)
	p("  the mean in-flight requests at that load.\n")
	p("- **Scoring.** A page counts for a breach when it starts at most %s before the breach begins or while it\n", human(leadHorizon))
	p("  lasts; its lead is the breach's start minus the page's. Any other page is false.\n")
	p("- **Rules.** Evaluated every %s in order, recording rules writing their output back before the alerts read\n", human(o.EvalInterval))
	p("  it, by Prometheus's PromQL engine (lookback 5m) over an in-memory storage. Alert states follow\n")
	p("  Prometheus's `rules.AlertingRule` (pending at the first evaluation that returns the label set, firing\n")
	p("  once active for the `for` duration, resolved when it is gone); a test checks the page's firing time\n")
	p("  against the real promtool.\n")
}
