package detection

import (
	"fmt"
	"strings"
)

// seedsTable shows that the goals do not hang on one seed: kneewatch's page
// and headroom error in every scenario, run again with other seeds (other
// arrivals, request lengths and knee sweeps), without the what-ifs.
func (r *Report) seedsTable(p func(string, ...any)) {
	if len(r.OtherSeeds) == 0 {
		return
	}
	all := append([]*Report{r}, r.OtherSeeds...)
	p("## Other seeds\n\n")
	p("The same scenarios with other seeds: other arrivals, request lengths and true knees (each seed measures\n")
	p("its own). kneewatch's page lead before each breach (+ before, − after it began), and the headroom error\n")
	p("(mean / 95th percentile).\n\n")
	p("| seed | knees: chat, rag, long-context in flight |")
	for _, res := range r.Results {
		p(" %d %s |", res.Scenario.ID, res.Scenario.Name)
	}
	p(" page ≥ %s before every breach | no page when safe |\n|---|---|", human(leadGoal))
	for range r.Results {
		p("---|")
	}
	p("---|---|\n")
	for _, rep := range all {
		p("| %d | %s |", rep.Options.Seed, rep.kneesInFlight())
		for _, res := range rep.Results {
			e := res.Headroom
			p(" %s; %.3f / %.3f |", cell(res.score(DetectorKneewatchPage)), e.Mean, e.P95)
		}
		p(" %s | %s |\n", mark(rep.pagesLead()), mark(rep.quietWhenSafe()))
	}
	p("\n")
}

// kneesInFlight lists each deployment's true knee once, in run order.
func (r *Report) kneesInFlight() string {
	var out []string
	seen := map[string]bool{}
	for _, res := range r.Results {
		if w := res.Scenario.Deployment.Workload; !seen[w] {
			seen[w] = true
			out = append(out, fmt.Sprintf("%.1f", res.Profile.Knee.Concurrency))
		}
	}
	return strings.Join(out, ", ")
}

// pagesLead reports whether kneewatch's page led every breach by leadGoal.
func (r *Report) pagesLead() bool {
	for _, res := range r.Results {
		s := res.score(DetectorKneewatchPage)
		for i := range res.Breaches {
			if !s.Caught[i] || s.Leads[i] < leadGoal {
				return false
			}
		}
	}
	return true
}

// quietWhenSafe reports whether kneewatch never paged in a safe scenario.
func (r *Report) quietWhenSafe() bool {
	for _, res := range r.Results {
		if res.Scenario.Safe && len(res.score(DetectorKneewatchPage).Pages) > 0 {
			return false
		}
	}
	return true
}
