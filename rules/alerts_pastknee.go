package rules

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/pql"
)

// pastKnee pages when a replica is past its knee and a latency SLO
// percentile over kneewatch's evaluation window is already over its
// threshold. It is the page for abrupt overload (a flash crowd, a step of
// heavier traffic): the headroom page's trend needs minutes of history and
// its level arm waits out For, while the multi-window burn rate waits for
// the bad requests to reach a share of its 5-minute window. The
// percentile's own window is the evaluation window (a minute by default),
// so it turns as the first slow requests finish, and requiring the replica
// to be past its knee as well keeps a latency blip at ordinary load (a
// single slow prompt at a low rate) from paging.
func (g *generator) pastKnee() rulefmt.Rule {
	o := g.o.PastKnee
	by := g.replicaBy("quantile")
	// The SLO thresholds carry their quantile as slo_quantile; the latency
	// summaries as quantile. Joining on it compares like with like.
	over := func(latency, threshold catalog.MetricDesc) parser.Expr {
		return pql.Gt(pql.MaxBy(by, g.kw(latency)),
			pql.MaxBy(by, pql.CopyLabel(g.kw(threshold), "quantile", "slo_quantile")), pql.On(by...))
	}
	breaking := pql.Or(over(catalog.MetricReplicaTTFT, catalog.MetricSLOTTFT), over(catalog.MetricReplicaTPOT, catalog.MetricSLOTPOT))
	return g.alert(alertSpec{
		name:       AlertPastKnee,
		expr:       pql.And(pql.Lt(g.kw(catalog.MetricReplicaHeadroom), pql.Num(o.Below)), breaking, pql.On(g.replicaBy()...)),
		forDur:     o.For,
		keepFiring: o.KeepFiringFor,
		page:       true,
		summary:    "Replica {{ $labels.replica }} is past its knee and missing its latency SLO",
		desc: fmt.Sprintf("Headroom of %s to its knee is {{ $value | humanizePercentage }}, under %s, and its TTFT or TPOT "+
			"at the SLO's quantile over kneewatch's evaluation window is over the SLO threshold, for %s. "+
			"Load rose past what the replica can serve within its SLO: scale out or shed load now.",
			replicaText, pct(o.Below), dur(o.For)),
	})
}
