package rules

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/pql"
)

// pastKnee pages when a replica is past its knee and is missing its
// latency SLO right now. It is the page for abrupt overload (a flash crowd,
// a step of heavier traffic): the headroom page's level arm reads a
// headroom averaged over enough requests, and the multi-window burn rate
// waits for the bad requests to reach a share of its 5-minute window.
//
// "Missing its SLO now" is counted, not interpolated: over kneewatch's
// evaluation window, at least two requests missed a threshold (as the
// engine's buckets support it: a request in the bucket holding the
// threshold counts as good, see kneewatch_replica_slo_good_requests_total)
// and more than the error budget's share of them did. That is a p99 over
// the last 100 requests breaking, which is how the SLO is judged (a p99
// of 100 requests is their second slowest; increase() extrapolates to the
// window's edges, by up to a third with 15 s scrapes, so one request reads
// as at most 1.33 and two as at least 2): at a low request rate the
// window holds fewer, and the quantile kneewatch exports then is absent,
// while one slow request among 40 read as a p99 over the threshold and
// paged a replica at 0.84× its knee. Requiring the replica to be past its
// knee as well keeps a latency blip at ordinary load from paging.
func (g *generator) pastKnee() rulefmt.Rule {
	o := g.o.PastKnee
	by := g.replicaBy()
	window := g.o.HeadroomExhausted.SustainBaseWindow
	finished := g.increaseBy(catalog.MetricReplicaRequests, window, by)
	bad := pql.Sub(finished, g.increaseBy(catalog.MetricReplicaGoodRequests, window, g.replicaBy("slo")), pql.On(by...), pql.GroupRight())
	budget := complement(g.o.SLO.Objective)
	missing := pql.Gt(pql.Gte(bad, pql.Num(2)), pql.Mul(pql.Num(budget), finished), pql.On(by...), pql.GroupLeft())
	return g.alert(alertSpec{
		name:       AlertPastKnee,
		expr:       pql.And(pql.Lt(g.kw(catalog.MetricReplicaHeadroom), pql.Num(o.Below)), missing, pql.On(by...)),
		forDur:     o.For,
		keepFiring: o.KeepFiringFor,
		page:       true,
		summary:    "Replica {{ $labels.replica }} is past its knee and missing its latency SLO",
		desc: fmt.Sprintf("Headroom of %s to its knee is {{ $value | humanizePercentage }}, under %s, and over kneewatch's "+
			"last %s at least two requests, and more than %s of them, missed a TTFT or TPOT threshold, for %s. "+
			"Load rose past what the replica can serve within its SLO: scale out or shed load now.",
			replicaText, pct(o.Below), dur(window), pct(budget), dur(o.For)),
	})
}
