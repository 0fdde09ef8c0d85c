package rules

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/kneewatch/kneewatch/pql"
)

// fleetCapacityLow fires while a model needs more replicas (at the target
// headroom) than it has available; its value is the shortfall. It reads
// the fleet records, not kneewatch's kneewatch_fleet_* series: those are per
// kneewatch instance (a shard's share of the fleet) and per model across
// namespaces, so they could neither count a sharded fleet whole nor carry
// the namespace the page routes by.
func (g *generator) fleetCapacityLow() rulefmt.Rule {
	o := g.o.Fleet
	shortfall := pql.Sub(g.recorded(recModelNeeded), g.recorded(recModelReplicas))
	return g.alert(alertSpec{
		name:    AlertFleetCapacityLow,
		expr:    pql.Gt(shortfall, pql.Num(0)),
		forDur:  o.For,
		fleet:   true,
		summary: "Model {{ $labels.model }} needs more replicas than it has",
		desc: fmt.Sprintf(`Model {{ $labels.model }}{{ with $labels.namespace }} in namespace {{ . }}{{ end }} needs {{ $value | printf "%%.1f" }} more replicas than it has available `+
			"to carry its load at the target headroom (its replicas keep less headroom than the target, on average), for %s. "+
			"Every replica will be pushed toward its knee.",
			dur(o.For)),
	})
}
