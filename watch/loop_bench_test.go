package watch

import (
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/collector"
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
	snaps := make([]collector.Snapshot, warm+b.N)
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
