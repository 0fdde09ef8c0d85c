package rules

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kneewatch/kneewatch/catalog"
)

// recordPrefix starts every recording rule name ("level:metric:operations").
const recordPrefix = "kneewatch:"

// targetLabels are added by Prometheus to every scraped series, so rules may
// match on them beside a metric's own labels.
var targetLabels = []string{"job", "instance"}

// check parses text (the printed e) with the PromQL parser, requires it to
// mean exactly what was built, and requires every metric it reads to be a
// catalog metric (matched only on its own labels, target labels or the
// Selector's), a kneewatch: recording rule, or an allowed external series.
func (g *generator) check(built parser.Expr, text string) error {
	parsed, err := g.p.ParseExpr(text)
	if err != nil {
		return fmt.Errorf("expression does not parse: %w\n%s", err, text)
	}
	// Tree shows the structure, which String alone hides: a + b * 2 prints
	// the same whether it was built as (a + b) * 2 or as a + (b * 2).
	if got, want := parser.Tree(parsed), parser.Tree(built); got != want {
		return fmt.Errorf("expression prints differently once parsed (operator precedence?):\nbuilt\n%s\nparsed\n%s", want, got)
	}
	var errs []error
	parser.Inspect(parsed, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if err := g.checkSelector(vs); err != nil {
				errs = append(errs, err)
			}
		}
		return nil
	})
	return errors.Join(errs...)
}

func (g *generator) checkSelector(vs *parser.VectorSelector) error {
	switch name := vs.Name; {
	case strings.HasPrefix(name, recordPrefix):
		return nil // checked against the file's recording rules by checkRecordedNames
	case strings.HasPrefix(name, "kneewatch_"):
		d, ok := catalog.Lookup(name)
		if !ok {
			return fmt.Errorf("reads %s, which is not in the catalog of kneewatch metrics", name)
		}
		allowed := slices.Concat(d.Labels, targetLabels, matcherNames(g.selector), []string{labels.MetricName})
		for _, m := range vs.LabelMatchers {
			if !slices.Contains(allowed, m.Name) {
				return fmt.Errorf("matches label %q of %s, which has only %s", m.Name, name, strings.Join(d.Labels, ", "))
			}
		}
		return nil
	case g.external[name]:
		return nil
	default:
		return fmt.Errorf("reads %q, which is neither a kneewatch metric nor a series the options name", name)
	}
}

func matcherNames(ms []*labels.Matcher) []string {
	names := make([]string, 0, len(ms))
	for _, m := range ms {
		names = append(names, m.Name)
	}
	return names
}

// checkRecordedNames requires recording rule names to be unique and to carry
// the kneewatch: prefix, and every kneewatch: series a rule reads to be
// recorded in this file.
func checkRecordedNames(groups []Group) error {
	p := parser.NewParser(parser.Options{})
	recorded := map[string]bool{}
	var errs []error
	for _, gr := range groups {
		for _, r := range gr.Rules {
			if r.Record == "" {
				continue
			}
			if !strings.HasPrefix(r.Record, recordPrefix) {
				errs = append(errs, fmt.Errorf("recording rule %s: name must start with %s", r.Record, recordPrefix))
			}
			if recorded[r.Record] {
				errs = append(errs, fmt.Errorf("recording rule %s: recorded twice", r.Record))
			}
			recorded[r.Record] = true
		}
	}
	for _, gr := range groups {
		for _, r := range gr.Rules {
			e, err := p.ParseExpr(r.Expr)
			if err != nil {
				errs = append(errs, fmt.Errorf("rule %s%s: %w", r.Record, r.Alert, err))
				continue
			}
			for _, vs := range selectors(e) {
				if strings.HasPrefix(vs.Name, recordPrefix) && !recorded[vs.Name] {
					errs = append(errs, fmt.Errorf("rule %s%s: reads %s, which no rule records", r.Record, r.Alert, vs.Name))
				}
			}
		}
	}
	return joinErrors("rules: generating", errs)
}

func selectors(e parser.Expr) []*parser.VectorSelector {
	var out []*parser.VectorSelector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

// joinErrors prefixes a list of problems with what was being done; nil when
// there are none.
func joinErrors(doing string, errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w", doing, errors.Join(errs...))
}
