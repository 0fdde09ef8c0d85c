package rules

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/pql"
)

// targetDown fires when kneewatch cannot scrape a replica's engine or DCGM
// metrics. kneewatch_target_up has no model label, so the model is joined
// from the replica's evaluation series when there is one.
func (g *generator) targetDown() rulefmt.Rule {
	o := g.o.TargetDown
	down := pql.Eq(g.kw(catalog.MetricTargetUp), pql.Num(0))
	join := g.identityBy()
	models := pql.GroupBy(g.identityBy("model"), g.kw(catalog.MetricReplicaEvalOK))
	return g.alert(alertSpec{
		name: AlertTargetDown,
		expr: pql.Or(
			pql.Mul(down, models, pql.On(join...), pql.GroupLeft("model")),
			pql.Unless(down, models, pql.On(join...)),
		),
		forDur:  o.For,
		summary: "kneewatch cannot scrape the {{ $labels.source }} metrics of replica {{ $labels.replica }}",
		desc: fmt.Sprintf("The last scrapes of the {{ $labels.source }} metrics of replica {{ $labels.replica }}"+
			"{{ with $labels.model }} (model {{ . }}){{ end }} failed, for %s. "+
			`{{ if eq $labels.source "engine" }}Its headroom is unknown, so no headroom alert can fire for it.`+
			"{{ else }}GPU utilization is unknown; headroom still comes from the engine metrics.{{ end }}",
			dur(o.For)),
	})
}

// absentAlert fires when no kneewatch instance is up: nothing else here can.
func (g *generator) absentAlert() rulefmt.Rule {
	o := g.o.Absent
	return g.alert(alertSpec{
		name:     AlertAbsent,
		expr:     pql.Absent(pql.Eq(g.absent, pql.Num(1))),
		forDur:   o.For,
		page:     true,
		noLabels: true,
		summary:  "kneewatch is down or not scraped",
		desc: fmt.Sprintf("No series %s has been 1 for %s: no kneewatch instance is up and scraped, "+
			"so no headroom is exported and no knee alert can fire.", o.Selector, dur(o.For)),
	})
}
