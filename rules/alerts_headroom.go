package rules

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

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
// already low and its linear trend reaches the knee within the horizon, or
// when it is far past the knee: the page arrives before the SLO breaks, not
// after (see HeadroomExhaustedOptions for the arms).
func (g *generator) headroomExhausted() rulefmt.Rule {
	o := g.o.HeadroomExhausted
	raw := g.kw(catalog.MetricReplicaHeadroom)
	// The level and trend arms read the exported headroom, or its average
	// over enough requests when SustainRequests is set.
	read := raw
	if o.SustainRequests > 0 {
		read = g.recorded(recSustainedHeadroom)
	}
	trend := lte(predictLinear(read, o.PredictLookback, o.PredictHorizon), num(0))
	if o.PredictConfirm > 0 {
		trend = and(trend, lte(predictLinear(read, o.PredictConfirm, o.PredictHorizon), num(0)))
	}
	arms := []parser.Expr{
		lt(read, num(o.Below)),
		and(lt(read, num(o.PredictBelow)), trend),
	}
	if o.OverloadBelow < 0 {
		arms = append(arms, lt(raw, num(o.OverloadBelow)))
	}
	return g.alert(alertSpec{
		name:    AlertHeadroomExhausted,
		expr:    anyOf(arms...),
		forDur:  o.For,
		page:    true,
		summary: "Replica {{ $labels.replica }} is at its knee",
		desc:    g.headroomExhaustedText(),
	})
}

// headroomExhaustedText is the page's description: every armed condition,
// with its numbers.
func (g *generator) headroomExhaustedText() string {
	o := g.o.HeadroomExhausted
	which := "Headroom"
	if o.SustainRequests > 0 {
		which = fmt.Sprintf("Headroom (averaged over at least %d requests)", o.SustainRequests)
	}
	trend := fmt.Sprintf("linear trend over %s", dur(o.PredictLookback))
	if o.PredictConfirm > 0 {
		trend += fmt.Sprintf(" and over the last %s", dur(o.PredictConfirm))
	}
	text := fmt.Sprintf("%s of %s to its knee is {{ $value | humanizePercentage }}: under %s, "+
		"or under %s and on course (%s) to reach the knee within %s", which, replicaText,
		pct(o.Below), pct(o.PredictBelow), trend, dur(o.PredictHorizon))
	if o.OverloadBelow < 0 {
		text += fmt.Sprintf(", or already %s past it", pct(-o.OverloadBelow))
	}
	return text + fmt.Sprintf(", for %s. Latency SLOs break next: scale out or shed load now.", dur(o.For))
}
