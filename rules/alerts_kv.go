package rules

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/pql"
)

// Values of the signal label that says which condition fired an alert with
// two conditions, so its description can give the right number.
const (
	signalKVUsage     = "kv_cache_usage"
	signalPreemptions = "preemptions"
	signalMixDrift    = "mix_drift"
	signalEfficiency  = "throughput_efficiency"
	signalSLOHeld     = "slo_held_past_knee"
)

// kvCachePressure fires when the KV cache is fuller than at the knee by a
// margin (and fuller than MinUsage: a compute-bound knee may sit at 10% KV,
// where more usage is no pressure), or when the engine keeps preempting.
func (g *generator) kvCachePressure() rulefmt.Rule {
	o := g.o.KVCache
	usage := pql.Gt(g.kw(catalog.MetricReplicaKV), pql.ClampMin(pql.Add(g.kw(catalog.MetricKneeKV), pql.Num(o.Margin)), o.MinUsage))
	preempting := pql.Gt(g.kw(catalog.MetricReplicaPreemptions), pql.Num(o.PreemptionsPerSecond))
	return g.alert(alertSpec{
		name: AlertKVCachePressure,
		expr: pql.Or(
			pql.WithLabel(usage, "signal", signalKVUsage),
			pql.WithLabel(preempting, "signal", signalPreemptions),
		),
		forDur:  o.For,
		summary: "Replica {{ $labels.replica }} is short of KV cache",
		desc: fmt.Sprintf(`{{ if eq $labels.signal "%s" }}KV-cache usage of %s is {{ $value | humanizePercentage }}, `+
			"above its knee's usage plus %s (and above %s)"+
			`{{ else }}%s preempts {{ $value | printf "%%.3g" }} requests/s, above %s/s{{ end }}, for %s. `+
			"Requests will queue or be recomputed; the knee moves down while this lasts.",
			signalKVUsage, replicaText, pct(o.Margin), pct(o.MinUsage),
			"Replica {{ $labels.replica }} (model {{ $labels.model }})", numText(o.PreemptionsPerSecond), dur(o.For)),
	})
}
