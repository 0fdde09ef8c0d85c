package collector

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// parseFixtures are the engine expositions the parse path is measured on,
// all in the classic text format.
var parseFixtures = []string{
	"vllm-v1-full-synthetic.prom",
	"vllm-v0-synthetic.prom",
	"sglang-current-synthetic.prom",
	"tgi-synthetic.prom",
	"trtllm-tensorrtllm_backend-readme.prom",
}

// BenchmarkParsePath measures, on each fixture's bytes in one run, from
// the body to the normalized snapshot:
//
//   - expfmt: the path before the stream parser (expfmt's TextParser into
//     client_model families of every line, then Normalize);
//   - stream: the scrape path now (scanText, keeping only the families
//     the adapters read, then the same Normalize);
//
// and two peers that stop before any snapshot:
//
//   - prometheus: Prometheus's model/textparse text parser reading every
//     series' labels and value, as its scrape loop does before storage;
//   - textparse-filtered: the same parser building labels only for the
//     series the adapters read, the least any textparse-based stream
//     path must do (its lexer still reads every byte). It is the
//     alternative the scanner was chosen over.
//
// Each sub-benchmark reports allocs/op; docs/benchmarks/parse-path.md
// holds a run and the ratios.
func BenchmarkParsePath(b *testing.B) {
	for _, name := range parseFixtures {
		body := []byte(readFixture(b, name))
		b.Run(name, func(b *testing.B) {
			b.Run("expfmt", func(b *testing.B) {
				benchBody(b, body, func() {
					families, err := ParseText(bytes.NewReader(body))
					if err != nil {
						b.Fatal(err)
					}
					if _, err := Normalize(families, Options{}); err != nil {
						b.Fatal(err)
					}
				})
			})
			b.Run("stream", func(b *testing.B) {
				benchBody(b, body, func() {
					if _, err := streamSnapshot(body, textFormat, Options{}); err != nil {
						b.Fatal(err)
					}
				})
			})
			b.Run("prometheus", func(b *testing.B) {
				benchBody(b, body, func() {
					if prometheusParse(b, textparse.NewPromParser(body, labels.NewSymbolTable(), false), nil) == 0 {
						b.Fatal("textparse read no series")
					}
				})
			})
			b.Run("textparse-filtered", func(b *testing.B) {
				benchBody(b, body, func() {
					if prometheusParse(b, textparse.NewPromParser(body, labels.NewSymbolTable(), false), engineWanted.relevant) == 0 {
						b.Fatal("textparse kept no series")
					}
				})
			})
		})
	}
}

// BenchmarkParsePathOpenMetrics is BenchmarkParsePath for the full vLLM
// fixture rendered as OpenMetrics (what prometheus_client serves when
// asked for it, as kneewatch and Prometheus ask): the reference path
// (every series into families), the stream path (series of unread
// families skipped before their labels are built) and Prometheus's
// OpenMetrics parser reading every series.
func BenchmarkParsePathOpenMetrics(b *testing.B) {
	body := toOpenMetrics(b, []byte(readFixture(b, "vllm-v1-full-synthetic.prom")))
	b.Run("reference", func(b *testing.B) {
		benchBody(b, body, func() {
			families, err := ParseOpenMetrics(body)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Normalize(families, Options{}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("stream", func(b *testing.B) {
		benchBody(b, body, func() {
			if _, err := streamSnapshot(body, omFormat, Options{}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("prometheus", func(b *testing.B) {
		benchBody(b, body, func() {
			p := textparse.NewOpenMetricsParser(body, labels.NewSymbolTable(), textparse.WithOMParserSTSeriesSkipped())
			if prometheusParse(b, p, nil) == 0 {
				b.Fatal("textparse read no series")
			}
		})
	})
}

func benchBody(b *testing.B, body []byte, op func()) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		op()
	}
}

// prometheusParse reads body as Prometheus's scrape loop does: every
// series' labels and value through the parser, metadata entries skipped.
// With keep set, only the series whose name it keeps get their labels
// built. It returns the number of series read.
func prometheusParse(b *testing.B, p textparse.Parser, keep func([]byte) bool) int {
	var ls labels.Labels
	n := 0
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		if entry == textparse.EntrySeries {
			series, _, _ := p.Series()
			if keep != nil {
				if name, _, ok := splitMetricName(series); ok && !keep(name) {
					continue
				}
			}
			p.Labels(&ls)
			n++
		}
	}
}
