package rules

import (
	"fmt"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/pql"
)

// Group is one generated rule group and the comment printed above it.
type Group struct {
	rulefmt.RuleGroup
	Comment string
}

// Alerts lists the names of the alerts Generate writes, in file order.
func Alerts() []string {
	return []string{
		AlertHeadroomLow, AlertHeadroomExhausted, AlertPastKnee,
		AlertGoodputSLOBurnFast, AlertGoodputSLOBurnSlow, AlertModelSLOBurnFast, AlertModelSLOBurnSlow,
		AlertKVCachePressure, AlertProbesFailing, AlertProbeSuccessLow,
		AlertFleetCapacityLow, AlertKneeProfileMissing, AlertKneeProfileDrift,
		AlertTargetDown, AlertAbsent,
	}
}

// Generate builds every rule group from o. Each expression is parsed by the
// PromQL parser, must print back identically, and may name only catalog
// metrics (with their labels), recording rules of this file, and the raw
// series the ruler group and the absent alert read.
func Generate(o Options) ([]Group, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	g, err := newGenerator(o)
	if err != nil {
		return nil, err
	}
	groups := []Group{g.sloGroup(), g.budgetGroup(), g.fleetGroup(), g.probeGroup()}
	if hg := g.headroomGroup(); hg != nil {
		groups = append(groups, *hg)
	}
	if o.Ruler.Enabled {
		groups = append(groups, g.rulerGroup())
	}
	alerts := g.alertGroup()
	alerts.Rules = slices.DeleteFunc(alerts.Rules, func(r rulefmt.Rule) bool { return slices.Contains(o.Disabled, r.Alert) })
	groups = append(groups, alerts)
	if len(g.errs) > 0 {
		return nil, joinErrors("rules: generating", g.errs)
	}
	if err := checkRecordedNames(groups); err != nil {
		return nil, err
	}
	return groups, nil
}

// generator carries the options, parsed once, while groups are built. Rule
// builders record problems in errs rather than stopping at the first.
type generator struct {
	o        Options
	p        parser.Parser
	selector []*labels.Matcher // Options.Selector, on every kneewatch_* series
	ruler    []*labels.Matcher // Options.Ruler.Selector, on the raw engine series
	absent   *parser.VectorSelector
	external map[string]bool // non-kneewatch metric names rules may read
	errs     []error
}

func newGenerator(o Options) (*generator, error) {
	g := &generator{o: o, p: parser.NewParser(parser.Options{})}
	var err error
	if g.selector, err = parseMatchers(g.p, "Selector", o.Selector); err != nil {
		return nil, err
	}
	if g.ruler, err = parseMatchers(g.p, "Ruler.Selector", o.Ruler.Selector); err != nil {
		return nil, err
	}
	ms, err := g.p.ParseMetricSelector(o.Absent.Selector)
	if err != nil {
		return nil, fmt.Errorf("rules: options: Absent.Selector %q: %w", o.Absent.Selector, err)
	}
	g.absent = &parser.VectorSelector{LabelMatchers: ms}
	for _, m := range ms {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			g.absent.Name = m.Value
		}
	}
	g.external = map[string]bool{g.absent.Name: true}
	if o.Ruler.Enabled {
		g.external[o.Ruler.RunningMetric] = true
		g.external[o.Ruler.WaitingMetric] = true
		if o.Ruler.KVUsageMetric != "" {
			g.external[o.Ruler.KVUsageMetric] = true
		}
	}
	return g, nil
}

// parseMatchers parses a `{a="b",…}` selector into matchers; "" is none.
func parseMatchers(p parser.Parser, field, s string) ([]*labels.Matcher, error) {
	if s == "" {
		return nil, nil
	}
	ms, err := p.ParseMetricSelector(s)
	if err != nil {
		return nil, fmt.Errorf("rules: options: %s %q: %w", field, s, err)
	}
	for _, m := range ms {
		if m.Name == labels.MetricName {
			return nil, fmt.Errorf("rules: options: %s %q: must not name a metric, only labels", field, s)
		}
	}
	return ms, nil
}

// kw selects a kneewatch metric from the catalog, with Options.Selector and
// the given matchers. Taking the descriptor, not a name, keeps rules from
// reading a metric kneewatch does not export.
func (g *generator) kw(d catalog.MetricDesc, matchers ...*labels.Matcher) *parser.VectorSelector {
	return pql.Selector(d.Name, append(slices.Clone(g.selector), matchers...)...)
}

// recorded selects the output of one of this file's recording rules.
func (g *generator) recorded(name string) *parser.VectorSelector { return pql.Selector(name) }

// Label sets aggregations keep: a replica's, a model's and a probe target's,
// each with the routing labels and Options.GroupBy. A replica is its name,
// model and profile, and where it runs: namespace and pod (kneewatch's
// labels for the served replica) and cluster (global.external_labels, or a
// Thanos/Prometheus external label). Dropping namespace would send every
// page to kneewatch's own namespace in kube-prometheus-stack's Alertmanager,
// which groups and inhibits by it; dropping cluster would merge replicas of
// two clusters that share a name. A label a series lacks groups as empty,
// so keeping these costs nothing where they are not set.
func (g *generator) replicaBy(extra ...string) []string {
	return g.by(append([]string{"replica", "model", "profile", "namespace", "pod", "cluster"}, extra...)...)
}

// modelBy is a model's fleet: its replicas in one namespace of one cluster,
// so a model's page routes to the namespace that serves it.
func (g *generator) modelBy(extra ...string) []string {
	return g.by(append([]string{"model", "namespace", "cluster"}, extra...)...)
}
func (g *generator) probeBy() []string {
	return g.by("replica", "model", "namespace", "pod", "cluster")
}

// identityBy is a replica's identity alone, for series without model and
// profile (kneewatch_target_up).
func (g *generator) identityBy(extra ...string) []string {
	return g.by(append([]string{"replica", "namespace", "pod", "cluster"}, extra...)...)
}

// keptLabels are kept by every aggregation whatever Options.GroupBy says.
var keptLabels = []string{"replica", "model", "profile", "namespace", "pod", "cluster", "slo", "signal"}

func (g *generator) by(names ...string) []string { return append(names, g.o.GroupBy...) }

// expr checks e and returns the text for a rule: the parser's pretty print.
func (g *generator) expr(rule string, e parser.Expr) string {
	text := pretty(e)
	if err := g.check(e, text); err != nil {
		g.errs = append(g.errs, fmt.Errorf("rule %s: %w", rule, err))
	}
	return text
}

// record is a recording rule.
func (g *generator) record(name string, e parser.Expr) rulefmt.Rule {
	return rulefmt.Rule{Record: name, Expr: g.expr(name, e)}
}

// group is a rule group with the options' interval.
func (g *generator) group(name, comment string, rules []rulefmt.Rule) Group {
	return Group{
		RuleGroup: rulefmt.RuleGroup{Name: name, Interval: model.Duration(g.o.Interval), Rules: rules},
		Comment:   comment,
	}
}

// pretty prints e with the parser's pretty printer, except that a long
// top-level binary operation puts its operands flush left, one per block,
// around the operator line. Prettify would indent the first line, which
// YAML can only carry as a block scalar with an indentation indicator, and
// yaml.v3 cannot read those back inside a sequence.
func pretty(e parser.Expr) string {
	b, ok := e.(*parser.BinaryExpr)
	if !ok || len(e.String()) <= maxLine {
		return parser.Prettify(e)
	}
	return pretty(b.LHS) + "\n" + b.ShortString() + "\n" + pretty(b.RHS)
}

// maxLine is the parser's pretty printer's line length.
const maxLine = 100
