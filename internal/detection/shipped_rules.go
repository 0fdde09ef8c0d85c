package detection

import (
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kneewatch/kneewatch/rules"
)

// detectorRules returns the rule groups every detector is evaluated
// through, in evaluation order: the recording rules kneewatch's chosen
// alerts read and those alerts, exactly as rules.Generate ships them with
// its default options, then the baselines for the deployment's SLO.
func detectorRules(dep Deployment, variants []PageVariant, extra ...string) ([]rulefmt.RuleGroup, error) {
	shipped, err := shippedRules(extra...)
	if err != nil {
		return nil, err
	}
	base, err := baselineRules(dep)
	if err != nil {
		return nil, err
	}
	groups := append(shipped, base)
	if len(variants) > 0 {
		g, err := variantRules(variants)
		if err != nil {
			return nil, err
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// variantRules generates kneewatch's page once per variant, each with the
// default options but the variant's HeadroomExhausted, renamed so their
// alert states stay apart.
func variantRules(variants []PageVariant) (rulefmt.RuleGroup, error) {
	g := rulefmt.RuleGroup{Name: "page-variants"}
	for i, v := range variants {
		o := rules.DefaultOptions()
		o.HeadroomExhausted = v.Options
		if v.PastKnee != nil {
			o.PastKnee = *v.PastKnee
		}
		// The warning must stay less urgent than the page; only the page
		// is taken from this generation.
		if o.HeadroomLow.Below <= v.Options.Below {
			o.HeadroomLow.Below = min(v.Options.Below+0.1, 0.95)
		}
		groups, err := rules.Generate(o)
		if err != nil {
			return g, fmt.Errorf("page variant %s: %w", v.Name, err)
		}
		// A page that reads the sustained (and quick) headroom brings its
		// recording rules, renamed per variant (variants may average
		// differently).
		rename := func(expr string) string {
			for _, rec := range []string{rules.RecordSustainedHeadroom, rules.RecordQuickHeadroom} {
				expr = strings.ReplaceAll(expr, rec, fmt.Sprintf("%s:variant%d", rec, i))
			}
			return expr
		}
		found := false
		for _, gr := range groups {
			for _, r := range gr.Rules {
				switch {
				case r.Record == rules.RecordSustainedHeadroom || r.Record == rules.RecordQuickHeadroom:
					r.Record = rename(r.Record)
					g.Rules = append(g.Rules, r)
				case r.Alert == rules.AlertHeadroomExhausted:
					r.Alert = variantAlert(v)
					r.Expr = rename(r.Expr)
					g.Rules = append(g.Rules, r)
					found = true
				case r.Alert == rules.AlertPastKnee && v.PastKnee != nil:
					r.Alert = variantPastKneeAlert(v)
					g.Rules = append(g.Rules, r)
				}
			}
		}
		if !found {
			return g, fmt.Errorf("page variant %s: no %s among the generated rules", v.Name, rules.AlertHeadroomExhausted)
		}
	}
	return g, nil
}

// shippedRules picks kneewatch's generated alerts the detectors use and
// every recording rule they read, directly or through other recording rules.
func shippedRules(extra ...string) ([]rulefmt.RuleGroup, error) {
	want := slices.Clone(extra)
	for _, d := range Detectors() {
		if d.Shipped {
			want = append(want, d.Alerts...)
		}
	}
	return shippedAlerts(want)
}

// shippedAlerts picks the named alerts of kneewatch's generated rules and
// every recording rule they read.
func shippedAlerts(want []string) ([]rulefmt.RuleGroup, error) {
	groups, err := rules.Generate(rules.DefaultOptions())
	if err != nil {
		return nil, fmt.Errorf("generating kneewatch's rules: %w", err)
	}
	p := parser.NewParser(parser.Options{})
	needed := map[string]bool{}
	var alerts []rulefmt.Rule
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert != "" && slices.Contains(want, r.Alert) {
				alerts = append(alerts, r)
				names, err := metricNames(p, r.Expr)
				if err != nil {
					return nil, fmt.Errorf("alert %s: %w", r.Alert, err)
				}
				for _, n := range names {
					needed[n] = true
				}
			}
		}
	}
	if len(alerts) != len(want) {
		return nil, fmt.Errorf("kneewatch's rules define %d of the alerts %v", len(alerts), want)
	}
	// Recording rules feed each other; walk back until nothing new is needed.
	for changed := true; changed; {
		changed = false
		for _, g := range groups {
			for _, r := range g.Rules {
				if r.Record == "" || !needed[r.Record] {
					continue
				}
				names, err := metricNames(p, r.Expr)
				if err != nil {
					return nil, fmt.Errorf("recording rule %s: %w", r.Record, err)
				}
				for _, n := range names {
					if !needed[n] {
						needed[n], changed = true, true
					}
				}
			}
		}
	}
	var out []rulefmt.RuleGroup
	for _, g := range groups {
		var rs []rulefmt.Rule
		for _, r := range g.Rules {
			if r.Record != "" && needed[r.Record] {
				rs = append(rs, r)
			}
		}
		if len(rs) > 0 {
			out = append(out, rulefmt.RuleGroup{Name: g.Name, Rules: rs})
		}
	}
	return append(out, rulefmt.RuleGroup{Name: "kneewatch-alerts", Rules: alerts}), nil
}

// metricNames lists the metric names an expression selects.
func metricNames(p parser.Parser, expr string) ([]string, error) {
	e, err := p.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && vs.Name != "" {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names, nil
}
