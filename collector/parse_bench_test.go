package collector

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"

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

// BenchmarkParsePathAgainstPrometheus measures kneewatch's scrape parse
// path (the classic text parser into client_model families, then the
// engine adapter) on each fixture and, in the same run on the same bytes,
// Prometheus's model/textparse text parser reading every series as its
// scrape loop does before storage. It reports the peer's ns/op and
// allocs/op and kneewatch's time as a multiple of it (x_prometheus), so
// the ratio comes from one process under one load.
func BenchmarkParsePathAgainstPrometheus(b *testing.B) {
	for _, name := range parseFixtures {
		body := []byte(readFixture(b, name))
		b.Run(name, func(b *testing.B) {
			peer := timePeer(b, body)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				families, err := ParseText(bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Normalize(families, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			own := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(peer.nsPerOp, "prom_ns/op")
			b.ReportMetric(peer.allocsPerOp, "prom_allocs/op")
			b.ReportMetric(own/peer.nsPerOp, "x_prometheus")
		})
	}
}

type peerCost struct{ nsPerOp, allocsPerOp float64 }

// timePeer times Prometheus's parser on body for at least half a second,
// by hand: testing.Benchmark cannot run inside a running benchmark (both
// take the testing package's benchmark lock).
func timePeer(b *testing.B, body []byte) peerCost {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	n := 0
	for time.Since(start) < 500*time.Millisecond {
		if prometheusParse(b, body) == 0 {
			b.Fatal("textparse read no series")
		}
		n++
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	return peerCost{
		nsPerOp:     float64(elapsed.Nanoseconds()) / float64(n),
		allocsPerOp: float64(after.Mallocs-before.Mallocs) / float64(n),
	}
}

// prometheusParse reads body as Prometheus's scrape loop does: every
// series' labels and value through the text parser, metadata entries
// skipped. It returns the number of series.
func prometheusParse(b *testing.B, body []byte) int {
	p := textparse.NewPromParser(body, labels.NewSymbolTable(), false)
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
			p.Labels(&ls)
			_, _, _ = p.Series()
			n++
		}
	}
}
