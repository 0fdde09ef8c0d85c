// Package pql builds PromQL expressions as the Prometheus parser's own AST,
// printed by its printer: quoting, durations and operator syntax are the
// parser's, never hand-concatenated strings. Every operand that is itself
// an operation is parenthesised, so precedence never depends on the reader
// (or the writer) remembering PromQL's table.
//
// It is kneewatch's one PromQL builder: the generated rules (package rules)
// and the detection bench's baseline rules (internal/detection) are written
// with it. The dashboards' queries are strings on purpose: they hold Grafana
// variables ($__rate_interval as a range, $cluster in matchers) that are
// not PromQL until Grafana substitutes them, so the parser cannot build them.
package pql

import (
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Selector is a vector selector of metric name with matchers.
func Selector(name string, matchers ...*labels.Matcher) *parser.VectorSelector {
	return &parser.VectorSelector{
		Name:          name,
		LabelMatchers: append([]*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, name)}, matchers...),
	}
}

// Equal is the matcher label="value". Equality matchers cannot fail to build.
func Equal(name, value string) *labels.Matcher {
	return labels.MustNewMatcher(labels.MatchEqual, name, value)
}

// Matrix is the range selector v[window].
func Matrix(v *parser.VectorSelector, window time.Duration) *parser.MatrixSelector {
	return &parser.MatrixSelector{VectorSelector: v, Range: window}
}

// Call is the function call name(args…).
func Call(name string, args ...parser.Expr) *parser.Call {
	return &parser.Call{Func: parser.Functions[name], Args: args}
}

// Rate is rate(v[window]).
func Rate(v *parser.VectorSelector, window time.Duration) parser.Expr {
	return Call("rate", Matrix(v, window))
}

// AvgOverTime is avg_over_time(v[window]).
func AvgOverTime(v *parser.VectorSelector, window time.Duration) parser.Expr {
	return Call("avg_over_time", Matrix(v, window))
}

// PredictLinear extrapolates v over lookback to horizon from now.
func PredictLinear(v *parser.VectorSelector, lookback, horizon time.Duration) parser.Expr {
	return Call("predict_linear", Matrix(v, lookback), Num(horizon.Seconds()))
}

// Offset is v read d in the past (PromQL's offset modifier).
func Offset(v *parser.VectorSelector, d time.Duration) *parser.VectorSelector {
	c := *v
	c.OriginalOffset = d
	return &c
}

// MaxOverTime is the largest value of v over window.
func MaxOverTime(v *parser.VectorSelector, window time.Duration) parser.Expr {
	return Call("max_over_time", Matrix(v, window))
}

// MaxOverSubquery is the largest value e took over window, evaluated at
// the rule evaluation interval (a subquery): e has been at most that for
// the whole window.
func MaxOverSubquery(e parser.Expr, window time.Duration) parser.Expr {
	return Call("max_over_time", &parser.SubqueryExpr{Expr: e, Range: window})
}

// Absent is absent(e): 1 when e has no series.
func Absent(e parser.Expr) parser.Expr { return Call("absent", e) }

// ClampMin is clamp_min(e, lo).
func ClampMin(e parser.Expr, lo float64) parser.Expr { return Call("clamp_min", e, Num(lo)) }

// WithLabel sets label name to value on every series of e (label_replace with
// an empty source and regex, which always matches).
func WithLabel(e parser.Expr, name, value string) parser.Expr {
	return Call("label_replace", e, Str(name), Str(value), Str(""), Str(""))
}

// CopyLabel sets label dst to the value of label src on every series of e
// that has a non-empty src.
func CopyLabel(e parser.Expr, dst, src string) parser.Expr {
	return Call("label_replace", e, Str(dst), Str("$1"), Str(src), Str("(.+)"))
}

// Num is a number literal.
func Num(v float64) *parser.NumberLiteral { return &parser.NumberLiteral{Val: v} }

// Str is a string literal.
func Str(s string) *parser.StringLiteral { return &parser.StringLiteral{Val: s} }

// Aggregate is op by (by…) (e); no by aggregates everything.
func Aggregate(op parser.ItemType, by []string, e parser.Expr) parser.Expr {
	return &parser.AggregateExpr{Op: op, Grouping: by, Expr: e}
}

// SumBy, MaxBy, MinBy, CountBy and GroupBy aggregate e by the labels by
// (nil for one series over everything).
func SumBy(by []string, e parser.Expr) parser.Expr { return Aggregate(parser.SUM, by, e) }

// MaxBy is max by (by…) (e); see SumBy.
func MaxBy(by []string, e parser.Expr) parser.Expr { return Aggregate(parser.MAX, by, e) }

// MinBy is min by (by…) (e); see SumBy.
func MinBy(by []string, e parser.Expr) parser.Expr { return Aggregate(parser.MIN, by, e) }

// CountBy is count by (by…) (e); see SumBy.
func CountBy(by []string, e parser.Expr) parser.Expr { return Aggregate(parser.COUNT, by, e) }

// GroupBy is group by (by…) (e); see SumBy.
func GroupBy(by []string, e parser.Expr) parser.Expr { return Aggregate(parser.GROUP, by, e) }

// Matching modifies how a binary operation pairs the series of its sides.
type Matching func(*parser.VectorMatching)

// On matches series on these labels only.
func On(names ...string) Matching {
	return func(m *parser.VectorMatching) { m.On, m.MatchingLabels = true, names }
}

// Ignoring matches series on every label but these.
func Ignoring(names ...string) Matching {
	return func(m *parser.VectorMatching) { m.On, m.MatchingLabels = false, names }
}

// GroupLeft lets many left series match one right series, copying include
// labels from the right.
func GroupLeft(include ...string) Matching {
	return func(m *parser.VectorMatching) { m.Card, m.Include = parser.CardManyToOne, include }
}

// GroupRight lets many right series match one left series; the result keeps
// the right side's labels.
func GroupRight(include ...string) Matching {
	return func(m *parser.VectorMatching) { m.Card, m.Include = parser.CardOneToMany, include }
}

// Binary is lhs op rhs with the given matching; operands that are operations
// are parenthesised.
func Binary(op parser.ItemType, lhs, rhs parser.Expr, ms ...Matching) parser.Expr {
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

// The arithmetic, comparison and set operators, as Binary with that op.

// Add is l + r.
func Add(l, r parser.Expr, ms ...Matching) parser.Expr { return Binary(parser.ADD, l, r, ms...) }

// Sub is l - r.
func Sub(l, r parser.Expr, ms ...Matching) parser.Expr { return Binary(parser.SUB, l, r, ms...) }

// Mul is l * r.
func Mul(l, r parser.Expr, ms ...Matching) parser.Expr { return Binary(parser.MUL, l, r, ms...) }

// Div is l / r.
func Div(l, r parser.Expr, ms ...Matching) parser.Expr { return Binary(parser.DIV, l, r, ms...) }

// Lt is l < r.
func Lt(l, r parser.Expr, ms ...Matching) parser.Expr { return Binary(parser.LSS, l, r, ms...) }

// Lte is l <= r.
func Lte(l, r parser.Expr, ms ...Matching) parser.Expr { return Binary(parser.LTE, l, r, ms...) }

// Gt is l > r.
func Gt(l, r parser.Expr, ms ...Matching) parser.Expr { return Binary(parser.GTR, l, r, ms...) }

// Gte is l >= r.
func Gte(l, r parser.Expr, ms ...Matching) parser.Expr { return Binary(parser.GTE, l, r, ms...) }

// Eq is l == r.
func Eq(l, r parser.Expr, ms ...Matching) parser.Expr { return Binary(parser.EQLC, l, r, ms...) }

// And is l and r.
func And(l, r parser.Expr, ms ...Matching) parser.Expr { return Binary(parser.LAND, l, r, ms...) }

// Or is l or r.
func Or(l, r parser.Expr, ms ...Matching) parser.Expr { return Binary(parser.LOR, l, r, ms...) }

// Unless is l unless r.
func Unless(l, r parser.Expr, ms ...Matching) parser.Expr {
	return Binary(parser.LUNLESS, l, r, ms...)
}

// AnyOf is e1 or e2 or … (nil for no expressions).
func AnyOf(es ...parser.Expr) parser.Expr {
	if len(es) == 0 {
		return nil
	}
	out := es[0]
	for _, e := range es[1:] {
		out = Or(out, e)
	}
	return out
}
