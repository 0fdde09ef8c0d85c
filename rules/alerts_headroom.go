package rules

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/pql"
)

// replicaText names a replica and its model in annotation text.
const replicaText = "replica {{ $labels.replica }} (model {{ $labels.model }})"

func (g *generator) headroomLow() rulefmt.Rule {
	o := g.o.HeadroomLow
	return g.alert(alertSpec{
		name:    AlertHeadroomLow,
		expr:    pql.Lt(g.kw(catalog.MetricReplicaHeadroom), pql.Num(o.Below)),
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
	predicted := pql.PredictLinear(read, o.PredictLookback, o.PredictHorizon)
	if o.PredictHold > 0 {
		predicted = pql.MaxOverSubquery(predicted, o.PredictHold)
	}
	trend := pql.Lte(predicted, pql.Num(0))
	if o.PredictConfirm > 0 {
		trend = pql.And(trend, pql.Lte(pql.PredictLinear(read, o.PredictConfirm, o.PredictHorizon), pql.Num(0)))
	}
	arms := []parser.Expr{g.heldUnder(read, o.Below, o.SustainRequests > 0)}
	if o.PredictHorizon > 0 {
		arms = append(arms, pql.And(pql.Lt(read, pql.Num(o.PredictBelow)), trend))
	}
	if o.quickArm() {
		arms = append(arms, g.heldUnder(g.recorded(RecordQuickHeadroom), o.QuickBelow, true))
	}
	if o.OverloadBelow < 0 {
		arms = append(arms, pql.Lt(raw, pql.Num(o.OverloadBelow)))
	}
	expr := pql.AnyOf(arms...)
	if o.WatchedFor > 0 {
		watched := pql.MaxBy(g.replicaBy(), pql.Offset(g.kw(catalog.MetricReplicaRequests), o.WatchedFor))
		expr = pql.And(expr, watched, pql.On(g.replicaBy()...))
	}
	return g.alert(alertSpec{
		name:       AlertHeadroomExhausted,
		expr:       expr,
		forDur:     o.For,
		keepFiring: o.KeepFiringFor,
		page:       true,
		summary:    "Replica {{ $labels.replica }} is at its knee",
		desc:       g.headroomExhaustedText(),
	})
}

// heldUnder is a level arm of the page: read under below for BelowHold.
// When read is an average over requests (averaged), RecoveredAbove also
// applies: a long average still remembers a surge that has passed, so the
// present must not show the replica well clear of its knee.
func (g *generator) heldUnder(read *parser.VectorSelector, below float64, averaged bool) parser.Expr {
	o := g.o.HeadroomExhausted
	level := parser.Expr(read)
	if o.BelowHold > 0 {
		level = pql.MaxOverTime(read, o.BelowHold)
	}
	arm := pql.Lt(level, pql.Num(below))
	if averaged && o.RecoveredAbove > 0 {
		arm = pql.And(arm, pql.Lt(g.perReplica(catalog.MetricReplicaHeadroom), pql.Num(o.RecoveredAbove)), pql.On(g.replicaBy()...))
	}
	return arm
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
	if o.PredictHold > 0 {
		trend += fmt.Sprintf(", for %s", dur(o.PredictHold))
	}
	level := "under " + pct(o.Below)
	if o.BelowHold > 0 {
		level += " for " + dur(o.BelowHold)
	}
	if o.SustainRequests > 0 && o.RecoveredAbove > 0 {
		level += fmt.Sprintf(" while the last evaluation window's is under %s", pct(o.RecoveredAbove))
	}
	text := fmt.Sprintf("%s of %s to its knee is {{ $value | humanizePercentage }}: %s", which, replicaText, level)
	if o.PredictHorizon > 0 {
		text += fmt.Sprintf(", or under %s and on course (%s) to reach the knee within %s",
			pct(o.PredictBelow), trend, dur(o.PredictHorizon))
	}
	if o.quickArm() {
		text += fmt.Sprintf(", or under %s averaged over at least %d requests", pct(o.QuickBelow), o.QuickRequests)
	}
	if o.OverloadBelow < 0 {
		text += fmt.Sprintf(", or already %s past it", pct(-o.OverloadBelow))
	}
	if o.For > 0 {
		text += fmt.Sprintf(", for %s", dur(o.For))
	}
	return text + ". Latency SLOs break next: scale out or shed load now."
}
