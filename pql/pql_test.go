package pql

import (
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
)

// The builder's output must be what the parser itself prints for the same
// expression, so a rule written with it reads back unchanged.
func TestBuiltExpressionsPrintAsTheParserDoes(t *testing.T) {
	reqs := Selector("requests_total", Equal("job", "a"))
	cases := []parser.Expr{
		Div(Sub(Num(1), Rate(reqs, 5*time.Minute)), Num(2)),
		Gt(SumBy([]string{"model"}, Rate(reqs, time.Hour)), Selector("limit"), On("model"), GroupLeft("team")),
		And(Gte(Selector("kv"), Num(0.8)), MaxOverSubquery(Selector("q"), 10*time.Minute)),
		AnyOf(Absent(reqs), WithLabel(ClampMin(reqs, 0), "dim", "kv")),
	}
	for _, e := range cases {
		printed := e.String()
		parsed, err := parser.NewParser(parser.Options{}).ParseExpr(printed)
		if err != nil {
			t.Fatalf("%s does not parse: %v", printed, err)
		}
		if again := parsed.String(); again != printed {
			t.Errorf("built %s, the parser prints it as %s", printed, again)
		}
	}
}
