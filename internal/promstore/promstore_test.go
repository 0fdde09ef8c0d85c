package promstore

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

func TestPromQLReadsTheStoredSeries(t *testing.T) {
	s := New()
	t0 := time.Unix(1_800_000_000, 0)
	l := labels.FromStrings(labels.MetricName, "requests_total", "job", "a")
	for i := range 7 {
		if err := s.Add(l, t0.Add(time.Duration(i)*10*time.Second).UnixMilli(), float64(i*50)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Add(l, t0.UnixMilli(), 1); err == nil {
		t.Error("a sample older than the series' last was accepted")
	}
	ng := NewEngine()
	defer ng.Close()
	v, err := Instant(ng, s, `rate(requests_total[1m])`, t0.Add(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 1 || v[0].F != 5 {
		t.Fatalf("rate = %v, want one sample of 5/s", v)
	}
}

func TestAScrapedHistogramBecomesItsBucketSeries(t *testing.T) {
	text := "# TYPE ttft_seconds histogram\nttft_seconds_bucket{le=\"0.1\"} 3\nttft_seconds_bucket{le=\"+Inf\"} 4\nttft_seconds_sum 0.9\nttft_seconds_count 4\n"
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	s := New()
	at := time.Unix(1_800_000_000, 0)
	if err := s.AddScrape(fams, at, map[string]string{"job": "vllm"}); err != nil {
		t.Fatal(err)
	}
	ng := NewEngine()
	defer ng.Close()
	v, err := Instant(ng, s, `ttft_seconds_bucket{job="vllm",le="0.1"} / ignoring(le) ttft_seconds_count`, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 1 || v[0].F != 0.75 {
		t.Fatalf("share under 0.1 s = %v, want 0.75", v)
	}
}

func TestAStaleMarkedSeriesVanishesAtOnceAndOthersStay(t *testing.T) {
	s := New()
	at := time.Unix(1000, 0)
	kw := labels.FromStrings("__name__", "x", "job", "kneewatch")
	other := labels.FromStrings("__name__", "x", "job", "other")
	for _, l := range []labels.Labels{kw, other} {
		if err := s.Add(l, at.UnixMilli(), 1); err != nil {
			t.Fatal(err)
		}
	}
	s.MarkStale(at.Add(15*time.Second), func(l labels.Labels) bool { return l.Get("job") == "kneewatch" })
	ng := NewEngine()
	defer ng.Close()
	v, err := Instant(ng, s, "x", at.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 1 || v[0].Metric.Get("job") != "other" {
		t.Errorf("30 s later, x = %v; want only job=other (kneewatch's series marked stale)", v)
	}
}
