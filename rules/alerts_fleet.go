package rules

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/kneewatch/kneewatch/catalog"
)

// fleetCapacityLow fires while a model needs more replicas (at the target
// headroom) than it has available; its value is the shortfall.
func (g *generator) fleetCapacityLow() rulefmt.Rule {
	o := g.o.Fleet
	shortfall := sub(g.kw(catalog.MetricFleetNeeded), g.kw(catalog.MetricFleetReplicas))
	return g.alert(alertSpec{
		name:    AlertFleetCapacityLow,
		expr:    gt(shortfall, num(0)),
		forDur:  o.For,
		fleet:   true,
		summary: "Model {{ $labels.model }} needs more replicas than it has",
		desc: fmt.Sprintf(`Model {{ $labels.model }} needs {{ $value | printf "%%.1f" }} more replicas than it has available `+
			"to carry its load at the target headroom (its replicas keep less headroom than the target, on average), for %s. "+
			"Every replica will be pushed toward its knee.",
			dur(o.For)),
	})
}
