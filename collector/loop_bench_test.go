package collector

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// BenchmarkAssessReplica is one evaluation of one replica: a new snapshot
// into a full one-minute window, then rates, means, quantiles, attainment
// and the knee inference — everything a round does per replica but the
// scrape.
func BenchmarkAssessReplica(b *testing.B) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	prof := loadValidProfile(b)
	w := NewWatcher(WatcherOptions{Interval: 5 * time.Second, Window: time.Minute})
	if err := w.SetTargets([]Target{{Replica: "r", ProfileName: "p", Profile: prof}}); err != nil {
		b.Fatal(err)
	}
	s := w.targets["r"]
	const warm = 13
	snaps := make([]Snapshot, warm+b.N)
	for i := range snaps {
		snaps[i] = replicaSnapshot(t0, i)
	}
	for i := range warm {
		w.assess(s, scrapeOutcome{snap: snaps[i]})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		e := w.assess(s, scrapeOutcome{snap: snaps[warm+i]})
		if !e.Result.OK {
			b.Fatalf("evaluation not ok: %s", e.Result.Reason)
		}
	}
}

// BenchmarkPeerPrometheusTextParse is the peer of BenchmarkParseVLLMScrape:
// Prometheus's own text-format parser walking the same scrape, series by
// series, as its scrape loop does before appending. The ratio of the two,
// measured in one run, says what kneewatch's parse-and-normalize costs
// against Prometheus ingesting the same target.
func BenchmarkPeerPrometheusTextParse(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("testdata", "vllm-v1-full-synthetic.prom"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		p := textparse.NewPromParser(body, labels.NewSymbolTable(), false)
		var lset labels.Labels
		series := 0
		for {
			e, err := p.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if e == textparse.EntrySeries {
				p.Labels(&lset)
				series++
			}
		}
		if series == 0 {
			b.Fatal("no series parsed")
		}
	}
}
