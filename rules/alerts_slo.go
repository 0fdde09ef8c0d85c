package rules

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// burn is a multi-window, multi-burn-rate alert: it fires when, for any of
// the windows, the error ratio over both the long and the short window
// exceeds factor × the error budget. Its value is the long window's error
// ratio.
func (g *generator) burn(name string, page bool, windows []BurnWindow, forDur time.Duration) rulefmt.Rule {
	budget := round12(1 - g.o.SLO.Objective)
	var branches []parser.Expr
	var text []string
	for _, w := range windows {
		threshold := mul(num(w.Factor), num(budget))
		branches = append(branches, and(
			gt(g.recorded(errorRatioRecord(w.Long)), threshold),
			gt(g.recorded(errorRatioRecord(w.Short)), threshold),
		))
		text = append(text, fmt.Sprintf("%s× over %s and %s", numText(w.Factor), dur(w.Long), dur(w.Short)))
	}
	speed := "slowly"
	if page {
		speed = "fast"
	}
	return g.alert(alertSpec{
		name:    name,
		expr:    anyOf(branches...),
		forDur:  forDur,
		page:    page,
		summary: fmt.Sprintf("Replica {{ $labels.replica }} burns its {{ $labels.slo }} SLO error budget %s", speed),
		desc: fmt.Sprintf("{{ $value | humanizePercentage }} of the requests of %s missed the {{ $labels.slo }} SLO "+
			"over the alert's long window; the objective of %s allows %s. The error budget burns at %s.",
			replicaText, pct(g.o.SLO.Objective), pct(budget), strings.Join(text, ", or ")),
	})
}
