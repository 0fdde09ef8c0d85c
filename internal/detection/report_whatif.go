package detection

import (
	"fmt"
	"strings"
	"time"

	"github.com/kneewatch/kneewatch/knee"
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

func (r *Report) closedLoopTable(p func(string, ...any)) {
	if len(r.Results) == 0 || r.Results[0].ClosedLoop == nil {
		return
	}
	p("## What-if: kneewatch given the closed-loop knee\n\n")
	p("The profile kneewatch is given holds the knee measured with Poisson arrivals (see Method). A closed-loop\n")
	p("sweep (vllm bench's `--max-concurrency`, GuideLLM's concurrent mode, `kneewatch sweep` by default) reports\n")
	p("the knee of a fixed number of clients, each sending when its last request ends. A second kneewatch was given\n")
	p("the same profile with its knee moved back to that closed-loop knee, on the same scrapes, under the same\n")
	p("shipped rules (default options), and scored against the same truth.\n\n")
	p("| scenario | closed-loop knee | Poisson knee: in flight (rate, × the closed-loop knee's) | kneewatch page, Poisson knee | kneewatch page, closed-loop knee | kneewatch warning, closed-loop knee | headroom error, closed-loop knee (mean / max) |\n")
	p("|---|---|---|---|---|---|---|\n")
	for _, res := range r.Results {
		cl := res.ClosedLoop
		var page, warn string
		for i := range cl.Scores {
			switch cl.Scores[i].Detector.Key {
			case DetectorKneewatchPage:
				page = cell(&cl.Scores[i])
			case DetectorKneewatchWarning:
				warn = cell(&cl.Scores[i])
			}
		}
		k := res.Profile.Knee
		p("| %d %s | %.0f | %.1f (%.2f/s, %.2f×) | %s | %s | %s | %.3f / %.3f |\n", res.Scenario.ID, res.Scenario.Name, k.ClosedLoopConcurrency,
			k.Concurrency, k.RequestsPerSecond, res.poissonRateShare(), cell(res.score(DetectorKneewatchPage)), page, warn, cl.Headroom.Mean, cl.Headroom.Max)
	}
	p("\n")
}

// poissonRateShare is the Poisson knee's rate as a multiple of the
// closed-loop knee's.
func (res *ScenarioResult) poissonRateShare() float64 {
	k := res.Profile.Knee
	if pt, ok := knee.PointAt(res.Profile.Points, k.ClosedLoopConcurrency); ok && pt.RequestsPerSecond > 0 {
		return k.RequestsPerSecond / pt.RequestsPerSecond
	}
	return knee.Unknown()
}

// poissonKnees describes each deployment's Poisson knee once.
func (r *Report) poissonKnees() []string {
	var out []string
	seen := map[string]bool{}
	for _, res := range r.Results {
		if seen[res.Scenario.Deployment.Workload] {
			continue
		}
		seen[res.Scenario.Deployment.Workload] = true
		k := res.Profile.Knee
		out = append(out, fmt.Sprintf("%s %.2f× the closed-loop knee's rate, %.1f in flight against a closed-loop knee of %.0f",
			res.Scenario.Deployment.Workload, res.poissonRateShare(), k.Concurrency, k.ClosedLoopConcurrency))
	}
	return out
}

// closedLoopLoss is the median loss of lead of the page given the
// closed-loop knee, how many breaches it missed or paged for after they
// began, and whether it stayed quiet in the safe scenarios.
func (r *Report) closedLoopLoss() (loss time.Duration, late int, quiet bool, ok bool) {
	var losses []float64
	quiet = true
	for _, res := range r.Results {
		if res.ClosedLoop == nil {
			return 0, 0, false, false
		}
		base := res.score(DetectorKneewatchPage)
		for _, s := range res.ClosedLoop.Scores {
			if s.Detector.Key != DetectorKneewatchPage {
				continue
			}
			if res.Scenario.Safe && len(s.Pages) > 0 {
				quiet = false
			}
			for i := range res.Breaches {
				if !s.Caught[i] || s.Leads[i] < 0 {
					late++
				}
				if s.Caught[i] && base.Caught[i] {
					losses = append(losses, (base.Leads[i] - s.Leads[i]).Seconds())
				}
			}
		}
	}
	if len(losses) == 0 {
		return 0, late, quiet, false
	}
	return time.Duration(median(losses) * float64(time.Second)), late, quiet, true
}
