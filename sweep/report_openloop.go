package sweep

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
)

// writeOpenLoop writes the report's open-loop section when the sweep ran
// Poisson trials: the closed-loop and poisson knees side by side, then one
// row per trial in run order.
func writeOpenLoop(b *bytes.Buffer, out *Outcome, slo knee.SLO) {
	if len(out.Trials) == 0 {
		return
	}
	q := measure.QuantileLabel(slo.Quantile)
	fmt.Fprintf(b, "\n## Open loop (Poisson arrivals)\n\n")
	fmt.Fprintf(b, "Each trial sends requests at exponentially distributed gaps, never waiting for answers, as users do. "+
		"A trial keeps the SLO when the %s TTFT and TPOT over a sliding window held within %s of their thresholds at every tick of its steady part, "+
		"at most %.0f%% of its requests failed, it never reached the cap on outstanding requests, "+
		"and its queue settled: its requests in flight over the last third of the steady part were not more than %.0f%% and %g requests above those over the first third. "+
		"In flight is the client's mean over the steady part, and in brackets over its first and last thirds.\n\n",
		q, fmt.Sprintf("%.0f%%", 100*judgingShare(out.ThresholdShare)), 100*MaxErrorRate, 100*measure.DefaultRunaway.Growth, measure.DefaultRunaway.Requests)
	if ck := out.ClosedLoopKnee; ck != nil {
		fmt.Fprintf(b, "The closed loop doubled its concurrency until a level broke the SLO, then measured at most %d more level between the last kept and the lowest broken one, and stopped. "+
			"The trials' rates are shares of the start rate, %.3g requests/s at concurrency %d: the lowest broken level's, or the last kept level's where the broken one's had collapsed under %.0f%% of it (past a KV-bound knee a replica preempts). "+
			"The closed-loop knee the profile records, about %s, is where the SLO margin crosses 1 between the last kept and the lowest broken level, interpolated.\n\n",
			DefaultBreakProbes, out.StartRate, out.StartConcurrency, 100*CollapsedRateShare, formatConcurrency(out.ClosedLoopEstimate))
		fmt.Fprintf(b, "| knee | requests/s | in flight | output tok/s | goodput tok/s | KV cache | limited by |\n")
		fmt.Fprintf(b, "|---|---:|---:|---:|---:|---:|---|\n")
		fmt.Fprintf(b, "| closed loop, last level kept | %.3g | %s | %.1f | %.1f | %.1f%% | %s |\n", closedRate(out), formatConcurrency(ck.Concurrency),
			ck.OutputTokensPerSecond, ck.GoodputTokensPerSecond, 100*ck.KVCacheUsage, ck.LimitingResource)
		if p := out.Profile; p != nil && p.Knee.Arrivals == knee.ArrivalsPoisson {
			k := p.Knee
			fmt.Fprintf(b, "| **poisson** | **%.3g** (%.2f× the start) | **%s** (%.2f×) | %.1f | %.1f | %.1f%% | %s |\n",
				k.RequestsPerSecond, k.RequestsPerSecond/out.StartRate, formatConcurrency(k.Concurrency), k.Concurrency/ck.Concurrency,
				k.OutputTokensPerSecond, k.GoodputTokensPerSecond, 100*k.KVCacheUsage, k.LimitingResource)
		} else {
			fmt.Fprintf(b, "| poisson | none | | | | | |\n")
		}
		fmt.Fprintln(b)
	}
	// A column of searches wherever a second one ran, finished or not.
	searches := out.Trials[len(out.Trials)-1].Search > 1
	if len(out.SearchBests) > 1 {
		fmt.Fprintf(b, "The rate was searched %d times, each search on other draws of the workload and arrivals; the knee is the median search's best kept trial. "+
			"Each search's best kept rate: %s.\n\n", len(out.SearchBests), searchBestsText(out))
	}
	search, searchRule := "", ""
	if searches {
		search, searchRule = "search | ", "---:|"
	}
	fmt.Fprintf(b, "| %strial | requests/s | × start rate | sent | completed | in flight | output tok/s | goodput tok/s | %s TTFT | %s TPOT | judged ticks | steady | SLO |\n", search, q, q)
	fmt.Fprintf(b, "|%s---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n", searchRule)
	for i, tr := range out.Trials {
		if searches {
			fmt.Fprintf(b, "| %d ", tr.Search)
		}
		v := "✓ kept"
		if !tr.Kept {
			v = "✗ " + tr.Breach
		}
		inFlight := formatConcurrency(tr.Point.Concurrency)
		if g := tr.InFlightThirds; g != [2]float64{} {
			inFlight += fmt.Sprintf(" (%.1f → %.1f)", g[0], g[1])
		}
		fmt.Fprintf(b, "| %d | %g | %.3f | %d | %d | %s | %.1f | %.1f | %s | %s | %d/%d | %s | %s |\n",
			i+1, tr.Rate, tr.Fraction, tr.Sent, len(tr.Completed), inFlight,
			tr.Point.OutputTokensPerSecond, tr.Point.GoodputTokensPerSecond,
			knownSeconds(tr.TTFTAtQuantile), knownSeconds(tr.TPOTAtQuantile), tr.Judged, tr.Ticks, tr.Steady.Round(time.Second), v)
	}
	for i, tr := range out.Trials {
		if tr.Kept && tr.Judged < tr.Ticks {
			fmt.Fprintf(b, "\nTrial %d: the SLO could not be judged at %d of %d ticks (a window held fewer than %d requests, even stretched to %s); "+
				"a longer `--open-loop-steady` judges a low rate on more requests.\n", i+1, tr.Ticks-tr.Judged, tr.Ticks, knee.MinWindowRequests, knee.MaxWindowStretch)
		}
	}
}

// searchBestsText lists each rate search's best kept rate in run order,
// the knee's in bold, "none" for a search that kept none.
func searchBestsText(out *Outcome) string {
	kneeAt := medianSearch(out)
	var parts []string
	for s, i := range out.SearchBests {
		switch {
		case i < 0:
			parts = append(parts, fmt.Sprintf("search %d none", s+1))
		case i == kneeAt:
			parts = append(parts, fmt.Sprintf("search %d **%g** (trial %d)", s+1, out.Trials[i].Rate, i+1))
		default:
			parts = append(parts, fmt.Sprintf("search %d %g (trial %d)", s+1, out.Trials[i].Rate, i+1))
		}
	}
	return strings.Join(parts, ", ")
}

// knownSeconds is seconds, or a dash for an unknown value.
func knownSeconds(s float64) string {
	if !knee.Known(s) {
		return "–"
	}
	return seconds(s)
}

// closedRate is the request rate measured at the closed-loop search's
// last kept level (its last measurement, a confirmation replacing a
// screening), 0 when there is none.
func closedRate(out *Outcome) float64 {
	rate := 0.0
	for _, lv := range out.Levels {
		if out.ClosedLoopKnee != nil && lv.Point.Concurrency == out.ClosedLoopKnee.Concurrency {
			rate = lv.Point.RequestsPerSecond
		}
	}
	return rate
}
