package rules

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/kneewatch/kneewatch/catalog"
)

// replicaText names a replica and its model in annotation text.
const replicaText = "replica {{ $labels.replica }} (model {{ $labels.model }})"

func (g *generator) headroomLow() rulefmt.Rule {
	o := g.o.HeadroomLow
	return g.alert(alertSpec{
		name:    AlertHeadroomLow,
		expr:    lt(g.kw(catalog.MetricReplicaHeadroom), num(o.Below)),
		forDur:  o.For,
		summary: fmt.Sprintf("Replica {{ $labels.replica }} is within %s of its knee", pct(o.Below)),
		desc: fmt.Sprintf("Headroom of %s to its knee is {{ $value | humanizePercentage }}, under %s for %s. "+
			"Past the knee more load buys only latency: add capacity or move load before it gets there.",
			replicaText, pct(o.Below), dur(o.For)),
	})
}

// headroomExhausted pages when headroom is nearly gone, or when it is
// already low and its linear trend reaches the knee within the horizon: the
// page arrives before the SLO breaks, not after.
func (g *generator) headroomExhausted() rulefmt.Rule {
	o := g.o.HeadroomExhausted
	headroom := g.kw(catalog.MetricReplicaHeadroom)
	falling := and(
		lt(headroom, num(o.PredictBelow)),
		lte(predictLinear(headroom, o.PredictLookback, o.PredictHorizon), num(0)),
	)
	return g.alert(alertSpec{
		name:    AlertHeadroomExhausted,
		expr:    or(lt(headroom, num(o.Below)), falling),
		forDur:  o.For,
		page:    true,
		summary: "Replica {{ $labels.replica }} is at its knee",
		desc: fmt.Sprintf("Headroom of %s to its knee is {{ $value | humanizePercentage }}: under %s, "+
			"or under %s and on course (linear trend over %s) to reach the knee within %s, for %s. "+
			"Latency SLOs break next: scale out or shed load now.",
			replicaText, pct(o.Below), pct(o.PredictBelow), dur(o.PredictLookback), dur(o.PredictHorizon), dur(o.For)),
	})
}
