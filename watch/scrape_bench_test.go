package watch

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/prometheus/common/config"
)

// BenchmarkEvaluateReplica is one replica's whole turn as Run makes it: the
// HTTP scrape of a loopback target (the scale bench's four expositions, in
// turn, each with the client the config file builds), the stream parse, the
// adapter, and the evaluation of a warm window. It is the inner loop for
// bench-scale's CPU per replica-scrape: what it allocates is what the
// garbage collector later pays for.
func BenchmarkEvaluateReplica(b *testing.B) {
	fixtures := []string{"vllm-v1-full-synthetic.prom", "vllm-v0-synthetic.prom", "sglang-current-synthetic.prom", "tgi-synthetic.prom"}
	// Enough replicas that one replica's scrapes are more than a
	// millisecond apart (a window keeps one snapshot per millisecond).
	const perFixture = 8
	prof := loadValidProfile(b)
	var targets []Target
	for i := range perFixture * len(fixtures) {
		body := []byte(readFixture(b, fixtures[i%len(fixtures)]))
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			_, _ = w.Write(body)
		}))
		b.Cleanup(srv.Close)
		client, err := collector.NewHTTPClient(config.DefaultHTTPClientConfig, fmt.Sprint(i))
		if err != nil {
			b.Fatal(err)
		}
		targets = append(targets, Target{Replica: fmt.Sprintf("r%02d", i), MetricsURL: srv.URL + "/metrics", Client: client,
			ProfileName: "p", Profile: prof})
	}
	w := NewWatcher(WatcherOptions{Interval: 15 * time.Second, Window: time.Minute})
	if err := w.SetTargets(targets); err != nil {
		b.Fatal(err)
	}
	states := w.sortedStatesLocked()
	ctx := context.Background()
	run := func(s *replicaState) {
		w.evaluateReplica(ctx, s, w.dcgmLatest)
		if e := s.last.Load(); e == nil || !e.EngineUp {
			b.Fatalf("%s: engine not up: %+v", s.target.Replica, e)
		}
	}
	for range 3 {
		for _, s := range states {
			run(s)
			time.Sleep(time.Millisecond)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		run(states[i%len(states)])
	}
}
