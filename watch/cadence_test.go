package watch

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/collector"
)

// With a fifth of the targets hanging until the scrape timeout (five times
// the interval), and the DCGM endpoint of a healthy replica hanging too,
// every healthy replica is still evaluated every interval, ±10%.
func TestHealthyReplicasKeepTheirCadenceWhileAFifthOfTheTargetsHang(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the watcher for 4 s of wall time")
	}
	const (
		interval = 200 * time.Millisecond
		targets  = 20
		hanging  = 4
	)
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	mux := http.NewServeMux()
	mux.Handle("/hang", hang)
	mux.Handle("/sane", textHandler(func() string { return vllmText(hostileModel, nil) }))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	prof := validProfile(t)
	var ts []Target
	for i := range targets {
		tg := Target{Replica: fmt.Sprintf("r%02d", i), MetricsURL: srv.URL + "/sane", Profile: prof, ProfileName: "valid"}
		if i < hanging {
			tg.MetricsURL = srv.URL + "/hang"
		}
		if i == hanging {
			tg.DCGM = &DCGMTarget{URL: srv.URL + "/hang"}
		}
		ts = append(ts, tg)
	}
	w := NewWatcher(WatcherOptions{Interval: interval, Window: 2 * time.Second, Limits: collector.ScrapeLimits{Timeout: 5 * interval}})
	if err := w.SetTargets(ts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	seen := map[string][]time.Time{}
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		r := w.Latest()
		if r == nil {
			continue
		}
		for _, e := range r.Replicas {
			if at := seen[e.Replica]; e.EngineUp && (len(at) == 0 || e.At.After(at[len(at)-1])) {
				seen[e.Replica] = append(at, e.At)
			}
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := hanging; i < targets; i++ {
		name := fmt.Sprintf("r%02d", i)
		at := seen[name]
		if len(at) < 10 {
			t.Errorf("%s evaluated %d times in 4 s, want about 20", name, len(at))
			continue
		}
		mean := at[len(at)-1].Sub(at[0]) / time.Duration(len(at)-1)
		if math.Abs(float64(mean-interval)) > 0.1*float64(interval) {
			t.Errorf("%s evaluated every %s on average, want %s ± 10%%", name, mean, interval)
		}
		if i == hanging || i == targets-1 {
			t.Logf("%s: %d evaluations, every %s on average", name, len(at), mean)
		}
	}
}
