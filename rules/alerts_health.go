package rules

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/kneewatch/kneewatch/catalog"
)

// targetDown fires when kneewatch cannot scrape a replica's engine or DCGM
// metrics. kneewatch_target_up has no model label, so the model is joined
// from the replica's evaluation series when there is one.
func (g *generator) targetDown() rulefmt.Rule {
	o := g.o.TargetDown
	down := eq(g.kw(catalog.MetricTargetUp), num(0))
	models := groupBy(g.by("replica", "model"), g.kw(catalog.MetricReplicaEvalOK))
	join := g.by("replica")
	return g.alert(alertSpec{
		name: AlertTargetDown,
		expr: or(
			mul(down, models, on(join...), groupLeft("model")),
			unless(down, models, on(join...)),
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
		expr:     absent(eq(g.absent, num(1))),
		forDur:   o.For,
		page:     true,
		noLabels: true,
		summary:  "kneewatch is down or not scraped",
		desc: fmt.Sprintf("No series %s has been 1 for %s: no kneewatch instance is up and scraped, "+
			"so no headroom is exported and no knee alert can fire.", o.Selector, dur(o.For)),
	})
}
