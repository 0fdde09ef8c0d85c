package rules

import (
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// alertSpec is what one alert needs beyond the shared conventions.
type alertSpec struct {
	name   string
	expr   parser.Expr
	forDur time.Duration
	// keepFiring is keep_firing_for: how long the alert stays firing after
	// its expression stops returning it.
	keepFiring time.Duration
	page       bool   // PageSeverity when true, else TicketSeverity
	summary    string // one line, Go template over $labels and $value
	desc       string // names replica and model and gives the numbers
	fleet      bool   // link the fleet dashboard (model only) rather than the replica's
	noLabels   bool   // the alert has no replica or model (kneewatch itself absent)
}

// alert builds an alerting rule with severity, extra labels, and the
// summary, description, runbook_url and dashboard_url annotations.
func (g *generator) alert(s alertSpec) rulefmt.Rule {
	ls := maps.Clone(g.o.ExtraLabels)
	if ls == nil {
		ls = map[string]string{}
	}
	ls["severity"] = g.o.TicketSeverity
	if s.page {
		ls["severity"] = g.o.PageSeverity
	}
	ann := map[string]string{
		"summary":     s.summary,
		"description": s.desc,
		"runbook_url": strings.TrimSuffix(g.o.RunbookBaseURL, "/") + "/" + s.name + ".md",
	}
	ann["dashboard_url"] = g.dashboardURL(s)
	return rulefmt.Rule{
		Alert:         s.name,
		Expr:          g.expr(s.name, s.expr),
		For:           model.Duration(s.forDur),
		KeepFiringFor: model.Duration(s.keepFiring),
		Labels:        ls,
		Annotations:   ann,
	}
}

// dashboardURL links the replica's (or the model's fleet) dashboard with its
// variables set from the alert's labels. Without a DashboardBaseURL the link
// is relative to Grafana's root (/d/…): Grafana's own alert views resolve it,
// and elsewhere it still names the dashboard and its variables, which no
// link at all would not.
func (g *generator) dashboardURL(s alertSpec) string {
	base := strings.TrimSuffix(g.o.DashboardBaseURL, "/") + "/d/"
	switch {
	case s.noLabels:
		return base + g.o.FleetDashboardUID
	case s.fleet:
		return base + g.o.FleetDashboardUID + "?var-model={{ $labels.model | urlquery }}"
	default:
		return base + g.o.ReplicaDashboardUID + "?var-model={{ $labels.model | urlquery }}&var-replica={{ $labels.replica | urlquery }}"
	}
}

// pct formats a ratio as a percentage for annotation text ("20%"), to four
// significant digits. The ratio is multiplied by 100 as the decimal it is
// written as, not in binary floating point (0.07 is 7%, not
// 7.000000000000001%), which is also what the chart's template computes
// (sprig's mulf): both print the same percentage at every value.
func pct(v float64) string {
	return strconv.FormatFloat(decimalOp(v, 100, (*big.Rat).Mul), 'g', 4, 64) + "%"
}

// complement is 1 − v, computed on the decimal v is written as (1 − 0.99 is
// 0.01), as the chart's template computes it (sprig's subf).
func complement(v float64) float64 { return decimalOp(1, v, (*big.Rat).Sub) }

// decimalOp applies op to a and b as the shortest decimals that print as
// them, and returns the float64 nearest to the exact result. sprig's float
// functions (mulf, subf) do the same with shopspring/decimal.
func decimalOp(a, b float64, op func(z, x, y *big.Rat) *big.Rat) float64 {
	f, _ := op(new(big.Rat), shortestDecimal(a), shortestDecimal(b)).Float64()
	return f
}

func shortestDecimal(v float64) *big.Rat {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(v, 'g', -1, 64))
	if !ok { // NaN or ±Inf, which validation keeps out
		return new(big.Rat)
	}
	return r
}

// numText formats a number for annotation text without float noise.
func numText(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// dur formats a duration the way Prometheus writes it ("10m", "1d").
func dur(d time.Duration) string { return model.Duration(d).String() }

// sortedKeys returns m's keys in order, so output and errors are stable.
func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// round12 rounds v to 12 significant digits, so 1 − 0.99 prints as 0.01.
func round12(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	return r
}
