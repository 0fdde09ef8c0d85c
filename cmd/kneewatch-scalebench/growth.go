package main

import (
	"fmt"
	"strings"
	"time"
)

// fit is a least-squares line y = intercept + slope·n.
type fit struct{ intercept, slope float64 }

// fitLine fits y over n; with one point it is a line through the origin.
func fitLine(n, y []float64) fit {
	if len(n) == 1 {
		return fit{slope: y[0] / n[0]}
	}
	var sn, sy, snn, sny float64
	for i := range n {
		sn += n[i]
		sy += y[i]
		snn += n[i] * n[i]
		sny += n[i] * y[i]
	}
	k := float64(len(n))
	slope := (k*sny - sn*sy) / (k*snn - sn*sn)
	return fit{intercept: (sy - slope*sn) / k, slope: slope}
}

func (f fit) at(n float64) float64 { return f.intercept + f.slope*n }

// growth describes one process's CPU and memory as the fleet grows: per
// replica at each size, the fitted per-replica slopes, and the
// extrapolation to a fleet of extrapolateN.
func growth(name string, rs []result, pick func(result) usage, interval time.Duration) string {
	var ns, cores, rss []float64
	for _, r := range rs {
		u := pick(r)
		ns = append(ns, float64(r.n))
		cores = append(cores, u.cpu/r.span.Seconds())
		rss = append(rss, u.rss)
	}
	c, m := fitLine(ns, cores), fitLine(ns, rss)
	var b strings.Builder
	fmt.Fprintf(&b, "- **%s**: per replica, ", name)
	var per []string
	for i, r := range rs {
		per = append(per, fmt.Sprintf("N=%d: %.3f%% of a core and %.2f MiB", r.n, 100*cores[i]/ns[i], rss[i]/ns[i]/(1<<20)))
	}
	b.WriteString(strings.Join(per, "; ") + ".\n")
	fmt.Fprintf(&b, "  Fitted over the %d sizes: CPU %.4f%% of a core per replica (%.2f ms of CPU per replica-scrape at %s) plus %.1f%%;\n",
		len(rs), 100*c.slope, 1e3*c.slope*interval.Seconds(), interval, 100*c.intercept)
	fmt.Fprintf(&b, "  RSS %.3f MiB per replica plus %.0f MiB.\n", m.slope/(1<<20), m.intercept/(1<<20))
	fmt.Fprintf(&b, "  Extrapolated (not measured) to %d replicas at %s: %.2f cores and %.0f MiB.\n",
		extrapolateN, interval, c.at(extrapolateN), m.at(extrapolateN)/(1<<20))
	return b.String()
}

// extrapolateN is the fleet the report extrapolates to (issue 15: 10,000
// replicas at 15 s within one core).
const extrapolateN = 10_000
