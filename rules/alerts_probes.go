package rules

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/kneewatch/kneewatch/pql"
)

func (g *generator) probesFailing() rulefmt.Rule {
	o := g.o.Probes
	return g.alert(alertSpec{
		name:    AlertProbesFailing,
		expr:    pql.Eq(g.recorded(probeSuccessRecord(o.FailingWindow)), pql.Num(0)),
		forDur:  o.FailingFor,
		page:    true,
		summary: "Every synthetic probe of replica {{ $labels.replica }} fails",
		desc: fmt.Sprintf("No synthetic probe of %s succeeded over the last %s "+
			"(success ratio {{ $value | humanizePercentage }}), for %s. It may export metrics, "+
			"and even headroom, while serving no tokens.",
			replicaText, dur(o.FailingWindow), dur(o.FailingFor)),
	})
}

func (g *generator) probeSuccessLow() rulefmt.Rule {
	o := g.o.Probes
	return g.alert(alertSpec{
		name:    AlertProbeSuccessLow,
		expr:    pql.Lt(g.recorded(probeSuccessRecord(o.SuccessWindow)), pql.Num(o.SuccessBelow)),
		forDur:  o.SuccessFor,
		summary: "Synthetic probes of replica {{ $labels.replica }} often fail",
		desc: fmt.Sprintf("Only {{ $value | humanizePercentage }} of the synthetic probes of %s succeeded "+
			"over the last %s, under %s, for %s.",
			replicaText, dur(o.SuccessWindow), pct(o.SuccessBelow), dur(o.SuccessFor)),
	})
}
