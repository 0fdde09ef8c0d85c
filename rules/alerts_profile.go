package rules

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"

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
// the profile (fewer tokens at this load than when it was swept). The
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
	return g.alert(alertSpec{
		name: AlertKneeProfileDrift,
		expr: pql.Or(
			pql.WithLabel(drift, "signal", signalMixDrift),
			pql.WithLabel(pql.Lt(efficiency, pql.Num(o.EfficiencyBelow)), "signal", signalEfficiency),
		),
		forDur:  o.For,
		summary: "The knee profile of replica {{ $labels.replica }} no longer fits it",
		desc: fmt.Sprintf(`{{ if eq $labels.signal "%s" }}The request mix of %s is {{ $value | humanizePercentage }} `+
			"away from its profile's (mean prompt or output tokens), above %s"+
			`{{ else }}%s makes {{ $value | humanizePercentage }} of the output tokens its profile predicts at this load, `+
			"under %s{{ end }}, for %s. Its knee has moved: re-sweep it.",
			signalMixDrift, replicaText, pct(o.MixDriftAbove),
			"Replica {{ $labels.replica }} (model {{ $labels.model }})", pct(o.EfficiencyBelow), dur(o.For)),
	})
}
