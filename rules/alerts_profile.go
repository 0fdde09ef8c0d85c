package rules

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/pql"
)

func (g *generator) kneeProfileMissing() rulefmt.Rule {
	o := g.o.ProfileMissing
	return g.alert(alertSpec{
		name:    AlertKneeProfileMissing,
		expr:    pql.Eq(g.kw(catalog.MetricReplicaEvalOK, pql.Equal("reason", o.Reason)), pql.Num(0)),
		forDur:  o.For,
		summary: "Replica {{ $labels.replica }} has no knee profile",
		desc: fmt.Sprintf("kneewatch has no knee profile for %s, for %s: its headroom is unknown "+
			"and no headroom alert can fire for it. Sweep it (kneewatch sweep) and add the profile.",
			replicaText, dur(o.For)),
	})
}

// kneeProfileDrift fires when the profile no longer describes the replica:
// the live request mix drifted from the profile's, or the live curve is off
// the profile (fewer tokens at this load than when it was swept), or the
// replica kept its SLO past the profile's knee (the knee is higher). The
// throughput efficiency is read back from the knee package's dimensions:
// load ratio ÷ effective-load ratio.
func (g *generator) kneeProfileDrift() rulefmt.Rule {
	o := g.o.ProfileDrift
	drift := pql.Gt(g.kw(catalog.MetricReplicaMixDrift), pql.Num(o.MixDriftAbove))
	efficiency := pql.Div(
		g.kw(catalog.MetricReplicaKneeLoad, pql.Equal("dimension", o.LoadDimension)),
		g.kw(catalog.MetricReplicaKneeLoad, pql.Equal("dimension", o.EffectiveLoadDimension)),
		pql.Ignoring("dimension"),
	)
	arms := []parser.Expr{
		pql.WithLabel(drift, "signal", signalMixDrift),
		pql.WithLabel(pql.Lt(efficiency, pql.Num(o.EfficiencyBelow)), "signal", signalEfficiency),
	}
	held := ""
	if o.SLOHeldWindow > 0 {
		arms = append(arms, pql.WithLabel(g.sloHeldPastKnee(), "signal", signalSLOHeld))
		held = fmt.Sprintf(`{{ else if eq $labels.signal "%s" }}Replica {{ $labels.replica }} (model {{ $labels.model }}) has kept `+
			"its latency SLO (%s of at least %d requests over %s) with its headroom, averaged as the page reads it, "+
			"at {{ $value | humanizePercentage }}, past its profile's knee",
			signalSLOHeld, pct(g.o.SLO.Objective), o.SLOHeldMinRequests, dur(o.SLOHeldWindow))
	}
	return g.alert(alertSpec{
		name:    AlertKneeProfileDrift,
		expr:    pql.AnyOf(arms...),
		forDur:  o.For,
		summary: "The knee profile of replica {{ $labels.replica }} no longer fits it",
		desc: fmt.Sprintf(`{{ if eq $labels.signal "%s" }}The request mix of %s is {{ $value | humanizePercentage }} `+
			"away from its profile's (mean prompt or output tokens), above %s"+
			`%s{{ else }}%s makes {{ $value | humanizePercentage }} of the output tokens its profile predicts at this load, `+
			"under %s{{ end }}, for %s. Its knee has moved: re-sweep it.",
			signalMixDrift, replicaText, pct(o.MixDriftAbove), held,
			"Replica {{ $labels.replica }} (model {{ $labels.model }})", pct(o.EfficiencyBelow), dur(o.For)),
	})
}

// sloHeldPastKnee is the replica's headroom as the page reads it (averaged
// over requests when the page does), where it is past the knee and the
// replica kept every SLO over ProfileDrift.SLOHeldWindow: it finished at
// least SLOHeldMinRequests requests there, and its worst SLO's good
// requests were at least the objective's share of them. A replica with no
// good-request counter has no such record and is left out.
func (g *generator) sloHeldPastKnee() parser.Expr {
	o := g.o.ProfileDrift
	by := g.replicaBy()
	read := g.perReplica(catalog.MetricReplicaHeadroom)
	if g.o.HeadroomExhausted.SustainRequests > 0 {
		read = g.recorded(recSustainedHeadroom)
	}
	finished := g.increaseBy(catalog.MetricReplicaRequests, o.SLOHeldWindow, by)
	worstGood := pql.MinBy(by, g.increaseBy(catalog.MetricReplicaGoodRequests, o.SLOHeldWindow, g.replicaBy("slo")))
	held := pql.And(
		pql.Gte(finished, pql.Num(float64(o.SLOHeldMinRequests))),
		pql.Gte(worstGood, pql.Mul(pql.Num(g.o.SLO.Objective), finished), pql.On(by...)),
		pql.On(by...))
	return pql.And(pql.Lt(read, pql.Num(0)), held, pql.On(by...))
}
