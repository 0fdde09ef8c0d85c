package collector

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

var parseReport = flag.String("parse.report", "", "run the parse-path benchmarks and write their Markdown report to this file (make bench-parse)")

// parseReportRounds is how many times each benchmark runs; the report
// gives the median, and every round runs a fixture's paths back to back,
// so a ratio compares runs made under the same load.
const parseReportRounds = 5

// TestParsePathReport writes docs/benchmarks/parse-path.md under
// -parse.report: BenchmarkParsePath's and BenchmarkParsePathOpenMetrics's
// paths on the same bytes, run with testing.Benchmark, with ns/op,
// allocs/op and each path's time over Prometheus's parser's.
func TestParsePathReport(t *testing.T) {
	if *parseReport == "" {
		t.Skip("set -parse.report (make bench-parse) to run the parse-path benchmarks")
	}
	type path struct {
		name string
		op   func(b *testing.B)
	}
	type row struct {
		fixture string
		bytes   int
		paths   []path
	}
	var rows []row
	for _, name := range parseFixtures {
		body := []byte(readFixture(t, name))
		rows = append(rows, row{fixture: name, bytes: len(body), paths: []path{
			{"before", func(b *testing.B) {
				families, err := ParseText(bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Normalize(families, Options{}); err != nil {
					b.Fatal(err)
				}
			}},
			{"now", func(b *testing.B) {
				if _, err := streamSnapshot(body, textFormat, Options{}); err != nil {
					b.Fatal(err)
				}
			}},
			{"textparse filtered", func(b *testing.B) {
				prometheusParse(b, textparse.NewPromParser(body, labels.NewSymbolTable(), false), engineWanted.relevant)
			}},
			{"Prometheus textparse", func(b *testing.B) {
				prometheusParse(b, textparse.NewPromParser(body, labels.NewSymbolTable(), false), nil)
			}},
		}})
	}
	om := toOpenMetrics(t, []byte(readFixture(t, "vllm-v1-full-synthetic.prom")))
	rows = append(rows, row{fixture: "vllm-v1-full-synthetic.prom as OpenMetrics", bytes: len(om), paths: []path{
		{"before", func(b *testing.B) {
			families, err := ParseOpenMetrics(om)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Normalize(families, Options{}); err != nil {
				b.Fatal(err)
			}
		}},
		{"now", func(b *testing.B) {
			if _, err := streamSnapshot(om, omFormat, Options{}); err != nil {
				b.Fatal(err)
			}
		}},
		{"Prometheus textparse", func(b *testing.B) {
			p := textparse.NewOpenMetricsParser(om, labels.NewSymbolTable(), textparse.WithOMParserSTSeriesSkipped())
			prometheusParse(b, p, nil)
		}},
	}})

	type result struct{ ns, allocs []float64 }
	results := map[string]*result{}
	key := func(r row, p path) string { return r.fixture + "\x00" + p.name }
	for range parseReportRounds {
		for _, r := range rows {
			for _, p := range r.paths {
				res := testing.Benchmark(func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						p.op(b)
					}
				})
				k := key(r, p)
				if results[k] == nil {
					results[k] = &result{}
				}
				results[k].ns = append(results[k].ns, float64(res.NsPerOp()))
				results[k].allocs = append(results[k].allocs, float64(res.AllocsPerOp()))
			}
		}
	}
	median := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}

	var b strings.Builder
	b.WriteString(`# Parse path: kneewatch against Prometheus's text parser

Written by ` + "`make bench-parse`" + ` (TestParsePathReport in collector/parse_report_test.go, the
paths of BenchmarkParsePath and BenchmarkParsePathOpenMetrics). Each path turns one fixture's
bytes into what it is for, every run on the same bytes:

- **before**: the scrape path before the stream parser: expfmt's TextParser (or, for
  OpenMetrics, Prometheus's parser) building client_model families of every line, then
  ` + "`Normalize`" + ` into the snapshot.
- **now**: the scrape path now: the text scanner (textscan.go) keeping only the families
  the adapters read, or for OpenMetrics Prometheus's parser skipping the other families' series
  before their labels are built, then the same ` + "`Normalize`" + `. It reads every fixture exactly as
  the path before does (TestTheStreamPathReadsEveryFixtureAsTheReferenceDoes).
- **textparse filtered**: Prometheus's text parser building labels only for the series the
  adapters read, no snapshot: the least a stream path built on ` + "`model/textparse`" + ` would cost (its
  lexer still reads every byte). The scanner was chosen over it on these figures.
- **Prometheus textparse**: the peer: Prometheus's parser reading every series' labels and
  value, as its scrape loop does before storage.

`)
	fmt.Fprintf(&b, "Medians of %d rounds; in each round a fixture's paths run back to back (testing.Benchmark,\n", parseReportRounds)
	fmt.Fprintf(&b, "about a second each), so the ratio to Prometheus compares runs under the same load. Run %s\n", time.Now().UTC().Format("2 January 2006"))
	b.WriteString("on the machine that ran it (2 cores shared with other work here: absolute times move with the load;\nthe ratios are the figures).\n\n")
	b.WriteString("| fixture | bytes | path | ns/op | allocs/op | time ÷ Prometheus's |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		peer := median(results[key(r, r.paths[len(r.paths)-1])].ns)
		for _, p := range r.paths {
			res := results[key(r, p)]
			ns := median(res.ns)
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %.0f | %.2f |\n", r.fixture, r.bytes, p.name, thousands(ns), median(res.allocs), ns/peer)
		}
	}
	if err := os.WriteFile(*parseReport, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", *parseReport)
}

// thousands formats a whole number with commas.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}
