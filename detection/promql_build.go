package detection

import (
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Typed PromQL builders for the baseline rules: expressions are assembled as
// parser AST nodes and printed by the parser, never concatenated as text.
// Operands that are operations are parenthesised.

func metric(name string, matchers ...*labels.Matcher) *parser.VectorSelector {
	return &parser.VectorSelector{
		Name:          name,
		LabelMatchers: append([]*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, name)}, matchers...),
	}
}

func labelIs(name, value string) *labels.Matcher {
	return labels.MustNewMatcher(labels.MatchEqual, name, value)
}

func rateOver(v *parser.VectorSelector, window time.Duration) parser.Expr {
	return &parser.Call{Func: parser.Functions["rate"], Args: parser.Expressions{&parser.MatrixSelector{VectorSelector: v, Range: window}}}
}

func number(v float64) parser.Expr { return &parser.NumberLiteral{Val: v} }

func sumOf(e parser.Expr) parser.Expr { return &parser.AggregateExpr{Op: parser.SUM, Expr: e} }

func maxByLabels(by []string, e parser.Expr) parser.Expr {
	return &parser.AggregateExpr{Op: parser.MAX, Grouping: by, Expr: e}
}

func binaryOp(op parser.ItemType, lhs, rhs parser.Expr) parser.Expr {
	b := &parser.BinaryExpr{Op: op, LHS: parenthesised(lhs), RHS: parenthesised(rhs)}
	if op == parser.LAND || op == parser.LOR {
		b.VectorMatching = &parser.VectorMatching{Card: parser.CardManyToMany}
	}
	return b
}

func parenthesised(e parser.Expr) parser.Expr {
	if _, ok := e.(*parser.BinaryExpr); ok {
		return &parser.ParenExpr{Expr: e}
	}
	return e
}
