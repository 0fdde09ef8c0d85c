package rules

import (
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Small typed builders for PromQL ASTs. The rules are assembled from these
// nodes and printed by the parser's own printer, so quoting, durations and
// operator syntax are the parser's, never hand-concatenated strings. Every
// operand that is itself an operation is parenthesised, so precedence never
// depends on the reader (or the writer) remembering PromQL's table.

// selector is a vector selector of metric name with matchers.
func selector(name string, matchers ...*labels.Matcher) *parser.VectorSelector {
	return &parser.VectorSelector{
		Name:          name,
		LabelMatchers: append([]*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, name)}, matchers...),
	}
}

// equal is the matcher label="value". Equality matchers cannot fail to build.
func equal(name, value string) *labels.Matcher {
	return labels.MustNewMatcher(labels.MatchEqual, name, value)
}

func matrix(v *parser.VectorSelector, window time.Duration) *parser.MatrixSelector {
	return &parser.MatrixSelector{VectorSelector: v, Range: window}
}

func call(name string, args ...parser.Expr) *parser.Call {
	return &parser.Call{Func: parser.Functions[name], Args: args}
}

func rate(v *parser.VectorSelector, window time.Duration) parser.Expr {
	return call("rate", matrix(v, window))
}

func avgOverTime(v *parser.VectorSelector, window time.Duration) parser.Expr {
	return call("avg_over_time", matrix(v, window))
}

// predictLinear extrapolates v over lookback to horizon from now.
func predictLinear(v *parser.VectorSelector, lookback, horizon time.Duration) parser.Expr {
	return call("predict_linear", matrix(v, lookback), num(horizon.Seconds()))
}

func absent(e parser.Expr) parser.Expr { return call("absent", e) }

func clampMin(e parser.Expr, lo float64) parser.Expr { return call("clamp_min", e, num(lo)) }

// withLabel sets label name to value on every series of e (label_replace with
// an empty source and regex, which always matches).
func withLabel(e parser.Expr, name, value string) parser.Expr {
	return call("label_replace", e, str(name), str(value), str(""), str(""))
}

// copyLabel sets label dst to the value of label src on every series of e
// that has a non-empty src.
func copyLabel(e parser.Expr, dst, src string) parser.Expr {
	return call("label_replace", e, str(dst), str("$1"), str(src), str("(.+)"))
}

func num(v float64) *parser.NumberLiteral { return &parser.NumberLiteral{Val: v} }
func str(s string) *parser.StringLiteral  { return &parser.StringLiteral{Val: s} }

func aggregate(op parser.ItemType, by []string, e parser.Expr) parser.Expr {
	return &parser.AggregateExpr{Op: op, Grouping: by, Expr: e}
}

func sumBy(by []string, e parser.Expr) parser.Expr   { return aggregate(parser.SUM, by, e) }
func maxBy(by []string, e parser.Expr) parser.Expr   { return aggregate(parser.MAX, by, e) }
func minBy(by []string, e parser.Expr) parser.Expr   { return aggregate(parser.MIN, by, e) }
func countBy(by []string, e parser.Expr) parser.Expr { return aggregate(parser.COUNT, by, e) }
func groupBy(by []string, e parser.Expr) parser.Expr { return aggregate(parser.GROUP, by, e) }

// matching modifies how a binary operation pairs the series of its sides.
type matching func(*parser.VectorMatching)

// on matches series on these labels only.
func on(names ...string) matching {
	return func(m *parser.VectorMatching) { m.On, m.MatchingLabels = true, names }
}

// ignoring matches series on every label but these.
func ignoring(names ...string) matching {
	return func(m *parser.VectorMatching) { m.On, m.MatchingLabels = false, names }
}

// groupLeft lets many left series match one right series, copying include
// labels from the right.
func groupLeft(include ...string) matching {
	return func(m *parser.VectorMatching) { m.Card, m.Include = parser.CardManyToOne, include }
}

// groupRight lets many right series match one left series; the result keeps
// the right side's labels.
func groupRight(include ...string) matching {
	return func(m *parser.VectorMatching) { m.Card, m.Include = parser.CardOneToMany, include }
}

// binary is lhs op rhs with the given matching; operands that are operations
// are parenthesised.
func binary(op parser.ItemType, lhs, rhs parser.Expr, ms ...matching) parser.Expr {
	e := &parser.BinaryExpr{Op: op, LHS: paren(lhs), RHS: paren(rhs)}
	if len(ms) > 0 {
		e.VectorMatching = &parser.VectorMatching{Card: parser.CardOneToOne}
		for _, m := range ms {
			m(e.VectorMatching)
		}
	}
	return e
}

func paren(e parser.Expr) parser.Expr {
	if _, ok := e.(*parser.BinaryExpr); ok {
		return &parser.ParenExpr{Expr: e}
	}
	return e
}

func add(l, r parser.Expr, ms ...matching) parser.Expr { return binary(parser.ADD, l, r, ms...) }
func sub(l, r parser.Expr, ms ...matching) parser.Expr { return binary(parser.SUB, l, r, ms...) }
func mul(l, r parser.Expr, ms ...matching) parser.Expr { return binary(parser.MUL, l, r, ms...) }
func div(l, r parser.Expr, ms ...matching) parser.Expr { return binary(parser.DIV, l, r, ms...) }
func lt(l, r parser.Expr, ms ...matching) parser.Expr  { return binary(parser.LSS, l, r, ms...) }
func lte(l, r parser.Expr, ms ...matching) parser.Expr { return binary(parser.LTE, l, r, ms...) }
func gt(l, r parser.Expr, ms ...matching) parser.Expr  { return binary(parser.GTR, l, r, ms...) }
func eq(l, r parser.Expr, ms ...matching) parser.Expr  { return binary(parser.EQLC, l, r, ms...) }
func and(l, r parser.Expr, ms ...matching) parser.Expr { return binary(parser.LAND, l, r, ms...) }
func or(l, r parser.Expr, ms ...matching) parser.Expr  { return binary(parser.LOR, l, r, ms...) }
func unless(l, r parser.Expr, ms ...matching) parser.Expr {
	return binary(parser.LUNLESS, l, r, ms...)
}

// anyOf is e1 or e2 or … (nil for no expressions).
func anyOf(es ...parser.Expr) parser.Expr {
	if len(es) == 0 {
		return nil
	}
	out := es[0]
	for _, e := range es[1:] {
		out = or(out, e)
	}
	return out
}
