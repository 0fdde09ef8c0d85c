package detection

import (
	"fmt"
	"strings"
	"time"
)

func (r *Report) variantTable(p func(string, ...any)) {
	var vs []Detector
	for _, d := range r.detectors(true) {
		if d.Variant {
			vs = append(vs, d)
		}
	}
	if len(vs) == 0 {
		return
	}
	p("## What-if: kneewatch's page with other options\n\n")
	p("The same generated alert with other `rules.Options.HeadroomExhausted` values (config, not code), scored\n")
	p("on the same runs.\n\n")
	p("| page |")
	for _, res := range r.Results {
		p(" %d %s |", res.Scenario.ID, res.Scenario.Name)
	}
	p("\n|---|")
	for range r.Results {
		p("---|")
	}
	p("\n")
	for _, d := range append([]Detector{r.detectors(false)[0]}, vs...) {
		p("| %s |", d.Name)
		for _, res := range r.Results {
			p(" %s |", cell(res.score(d.Key)))
		}
		p("\n")
	}
	p("\n")
}

// quietVariants names the page what-ifs that never paged in a safe scenario.
func (r *Report) quietVariants() []string {
	var out []string
	for _, d := range r.detectors(true) {
		if !d.Variant {
			continue
		}
		quiet := true
		for _, res := range r.Results {
			if res.Scenario.Safe && len(res.score(d.Key).Pages) > 0 {
				quiet = false
			}
		}
		if quiet {
			out = append(out, "`"+strings.TrimPrefix(d.Name, "kneewatch page, ")+"`")
		}
	}
	return out
}

func (r *Report) openLoopTable(p func(string, ...any)) {
	if len(r.Results) == 0 || r.Results[0].OpenLoop == nil {
		return
	}
	p("## What-if: the knee measured with open-loop traffic\n\n")
	p("`sim.FindKnee` (like `kneewatch sweep`, vllm bench's `--max-concurrency` and GuideLLM's concurrent mode)\n")
	p("measures the knee with a fixed number of clients, each sending when its last request ends. For each\n")
	p("deployment the bench also bisected the largest steady Poisson load that kept the SLO at every scrape of a\n")
	p("%s run (after %s of warm-up; %d halvings from %.1f× to 1× the knee rate), and gave a second kneewatch the\n",
		human(openLoopSteady), human(openLoopWarmup), openLoopSteps, openLoopLow)
	p("same profile with its knee moved there, on the same scrapes, under the same shipped rules (default options).\n\n")
	p("| scenario | closed-loop knee | open-loop knee (load, in flight) | kneewatch page | kneewatch warning | headroom error vs the closed-loop truth (mean / max) |\n")
	p("|---|---|---|---|---|---|\n")
	for _, res := range r.Results {
		ol := res.OpenLoop
		var page, warn string
		for i := range ol.Scores {
			switch ol.Scores[i].Detector.Key {
			case DetectorKneewatchPage:
				page = cell(&ol.Scores[i])
			case DetectorKneewatchWarning:
				warn = cell(&ol.Scores[i])
			}
		}
		p("| %d %s | %.0f | %.2f×, %.1f | %s | %s | %.3f / %.3f |\n", res.Scenario.ID, res.Scenario.Name, res.Profile.Knee.Concurrency,
			ol.Knee.Load, ol.Knee.InFlight, page, warn, ol.Headroom.Mean, ol.Headroom.Max)
	}
	p("\n")
}

// openLoopKnees describes each deployment's open-loop knee once.
func (r *Report) openLoopKnees() []string {
	var out []string
	seen := map[string]bool{}
	for _, res := range r.Results {
		ol := res.OpenLoop
		if ol == nil || seen[res.Scenario.Deployment.Workload] {
			continue
		}
		seen[res.Scenario.Deployment.Workload] = true
		out = append(out, fmt.Sprintf("%s %.2f× the closed-loop knee's rate, %.1f in flight against a knee of %.0f",
			res.Scenario.Deployment.Workload, ol.Knee.Load, ol.Knee.InFlight, res.Profile.Knee.Concurrency))
	}
	return out
}

// openLoopGain is the median gain in lead of the page given the open-loop
// knee, and whether it stayed quiet in the safe scenarios.
func (r *Report) openLoopGain() (gain time.Duration, quiet bool, ok bool) {
	var gains []float64
	quiet = true
	for _, res := range r.Results {
		if res.OpenLoop == nil {
			return 0, false, false
		}
		base := res.score(DetectorKneewatchPage)
		for _, s := range res.OpenLoop.Scores {
			if s.Detector.Key != DetectorKneewatchPage {
				continue
			}
			if res.Scenario.Safe && len(s.Pages) > 0 {
				quiet = false
			}
			for i := range res.Breaches {
				if s.Caught[i] && base.Caught[i] {
					gains = append(gains, (s.Leads[i] - base.Leads[i]).Seconds())
				}
			}
		}
	}
	if len(gains) == 0 {
		return 0, quiet, false
	}
	return time.Duration(median(gains) * float64(time.Second)), quiet, true
}
