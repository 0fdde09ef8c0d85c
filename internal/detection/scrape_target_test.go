package detection

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
)

func TestScrapeTargetStoresWhatPrometheusWould(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "lat_seconds", Help: "h", Buckets: []float64{0.5, 1}})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "temp", Help: "g", ConstLabels: prometheus.Labels{"job": "scraped"}})
	reg.MustRegister(h, g)
	st := newStore()
	job := newScrapeTarget(st, "job", "engine", "instance", "r:8000")
	scrape := func(i int) {
		t.Helper()
		mfs, err := scrapeRegistry(reg)
		if err != nil {
			t.Fatal(err)
		}
		if err := job.ingest(benchEpoch.Add(time.Duration(i)*5*time.Second), mfs); err != nil {
			t.Fatal(err)
		}
	}
	h.Observe(0.7)
	scrape(1)
	reg.Unregister(g)
	scrape(2)

	engine := newEngine()
	defer engine.Close()
	e := &ruleEvaluator{engine: engine, store: st}
	query := func(expr string, sec int) []float64 {
		t.Helper()
		v, err := e.query(context.Background(), expr, benchEpoch.Add(time.Duration(sec)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var out []float64
		for _, s := range v {
			out = append(out, s.F)
		}
		return out
	}
	// Bucket bounds are stored as Prometheus 3 writes them (1 → "1.0"), with +Inf.
	if got := query(`lat_seconds_bucket{le="1.0"}`, 5); len(got) != 1 || got[0] != 1 {
		t.Errorf(`lat_seconds_bucket{le="1.0"} = %v, want [1]`, got)
	}
	if got := query(`lat_seconds_bucket{le="+Inf",job="engine",instance="r:8000"}`, 5); len(got) != 1 || got[0] != 1 {
		t.Errorf(`the +Inf bucket with the target labels = %v, want [1]`, got)
	}
	// A scraped label clashing with a target label is kept as exported_<name>.
	if got := query(`temp{exported_job="scraped",job="engine"}`, 5); len(got) != 1 {
		t.Errorf("the clashing job label: %v, want one series", got)
	}
	// The gauge vanished from the second scrape: a staleness marker ends it
	// there instead of the 5-minute lookback carrying it on.
	if got := query(`temp`, 12); len(got) != 0 {
		t.Errorf("temp after it vanished = %v, want no sample", got)
	}
	vs := st.Values(labels.FromStrings("__name__", "temp", "exported_job", "scraped", "instance", "r:8000", "job", "engine"))
	if len(vs) != 2 || !value.IsStaleNaN(vs[1]) {
		t.Errorf("the vanished series holds %v, want a sample then a staleness marker", vs)
	}
}

func TestStoreRejectsSamplesOutOfOrder(t *testing.T) {
	st := newStore()
	l := newScrapeTarget(st, "job", "x").target
	if err := st.Add(l, 10, 1); err != nil {
		t.Fatal(err)
	}
	if err := st.Add(l, 10, 2); err == nil || !strings.Contains(err.Error(), "not after") {
		t.Errorf("a second sample at the same time: %v, want an error", err)
	}
	if math.IsNaN(staleNaN) == false {
		t.Error("the staleness marker is not a NaN")
	}
}
