package rules

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kneewatch/kneewatch/pql"
)

// burn is a multi-window, multi-burn-rate alert: it fires when, for any of
// the windows, the error ratio over both the long and the short window
// exceeds factor × the error budget. Its value is the long window's error
// ratio.
// A per-model burn reads the model's records and names the model; a
// per-replica one the replica's.
func (g *generator) burn(name string, page, perModel bool, windows []BurnWindow, forDur time.Duration) rulefmt.Rule {
	record, who, summaryWho := errorRatioRecord, replicaText, "Replica {{ $labels.replica }}"
	if perModel {
		record, who, summaryWho = modelErrorRatioRecord, modelText, "Model {{ $labels.model }}"
	}
	budget := complement(g.o.SLO.Objective)
	var branches []parser.Expr
	var text []string
	for _, w := range windows {
		threshold := pql.Mul(pql.Num(w.Factor), pql.Num(budget))
		branches = append(branches, pql.And(
			pql.Gt(g.recorded(record(w.Long)), threshold),
			pql.Gt(g.recorded(record(w.Short)), threshold),
		))
		text = append(text, fmt.Sprintf("%s× over %s and %s", numText(w.Factor), dur(w.Long), dur(w.Short)))
	}
	speed := "slowly"
	if page {
		speed = "fast"
	}
	return g.alert(alertSpec{
		name:    name,
		expr:    pql.AnyOf(branches...),
		forDur:  forDur,
		page:    page,
		fleet:   perModel,
		summary: fmt.Sprintf("%s burns its {{ $labels.slo }} SLO error budget %s", summaryWho, speed),
		desc: fmt.Sprintf("{{ $value | humanizePercentage }} of the requests of %s missed the {{ $labels.slo }} SLO "+
			"over the alert's long window; the objective of %s allows %s. The error budget burns at %s.",
			who, pct(g.o.SLO.Objective), pct(budget), strings.Join(text, ", or ")),
	})
}

// modelText names a model's fleet in annotation text.
const modelText = "model {{ $labels.model }}{{ with $labels.namespace }} in namespace {{ . }}{{ end }}"
