package e2e

import (
	"context"
	"sort"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// seriesStore is what a Prometheus server would hold after scraping: float
// samples by series, appended in time order. Prometheus's PromQL engine
// reads it through storage.Queryable, so rule expressions run on it exactly
// as in a server, without a TSDB on disk.
type seriesStore struct {
	labels  map[string]labels.Labels
	samples map[string][]chunks.Sample
}

func newSeriesStore() *seriesStore {
	return &seriesStore{labels: map[string]labels.Labels{}, samples: map[string][]chunks.Sample{}}
}

// add appends one sample; samples of a series must come in time order.
func (s *seriesStore) add(l labels.Labels, at time.Time, v float64) {
	key := l.String()
	s.labels[key] = l
	s.samples[key] = append(s.samples[key], sample{t: at.UnixMilli(), f: v})
}

// addScrape stores a parsed exposition as scraped at at, each series with
// the scrape job's target labels added (as Prometheus attaches job,
// instance and relabeled labels). Gauges, counters and untyped series are
// stored; histograms and summaries as their _bucket/_sum/_count (or
// quantile) series.
func (s *seriesStore) addScrape(families map[string]*dto.MetricFamily, at time.Time, target map[string]string) {
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			b := labels.NewBuilder(labels.EmptyLabels())
			for _, lp := range m.GetLabel() {
				b.Set(lp.GetName(), lp.GetValue())
			}
			for k, v := range target {
				b.Set(k, v)
			}
			put := func(metric string, v float64, extra ...string) {
				bb := labels.NewBuilder(b.Labels())
				bb.Set(labels.MetricName, metric)
				for i := 0; i+1 < len(extra); i += 2 {
					bb.Set(extra[i], extra[i+1])
				}
				s.add(bb.Labels(), at, v)
			}
			switch mf.GetType() {
			case dto.MetricType_GAUGE:
				put(name, m.GetGauge().GetValue())
			case dto.MetricType_COUNTER:
				put(name, m.GetCounter().GetValue())
			case dto.MetricType_UNTYPED:
				put(name, m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, bk := range h.GetBucket() {
					put(name+"_bucket", float64(bk.GetCumulativeCount()), "le", formatFloat(bk.GetUpperBound()))
				}
				put(name+"_bucket", float64(h.GetSampleCount()), "le", "+Inf")
				put(name+"_sum", h.GetSampleSum())
				put(name+"_count", float64(h.GetSampleCount()))
			case dto.MetricType_SUMMARY:
				sm := m.GetSummary()
				for _, q := range sm.GetQuantile() {
					put(name, q.GetValue(), "quantile", formatFloat(q.GetQuantile()))
				}
				put(name+"_sum", sm.GetSampleSum())
				put(name+"_count", float64(sm.GetSampleCount()))
			}
		}
	}
}

// Querier implements storage.Queryable.
func (s *seriesStore) Querier(_, _ int64) (storage.Querier, error) {
	keys := make([]string, 0, len(s.labels))
	for k := range s.labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return &storage.MockQuerier{SelectMockFunction: func(_ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
		var out []storage.Series
	series:
		for _, k := range keys {
			l := s.labels[k]
			for _, m := range ms {
				if !m.Matches(l.Get(m.Name)) {
					continue series
				}
			}
			out = append(out, storage.NewListSeries(l, s.samples[k]))
		}
		return &listSeriesSet{series: out, i: -1}
	}}, nil
}

// sample is one float sample of a list series.
type sample struct {
	t int64
	f float64
}

func (s sample) T() int64                      { return s.t }
func (s sample) ST() int64                     { return 0 }
func (s sample) F() float64                    { return s.f }
func (s sample) H() *histogram.Histogram       { return nil }
func (s sample) FH() *histogram.FloatHistogram { return nil }
func (s sample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s sample) Copy() chunks.Sample           { return s }

type listSeriesSet struct {
	series []storage.Series
	i      int
}

func (l *listSeriesSet) Next() bool                        { l.i++; return l.i < len(l.series) }
func (l *listSeriesSet) At() storage.Series                { return l.series[l.i] }
func (l *listSeriesSet) Err() error                        { return nil }
func (l *listSeriesSet) Warnings() annotations.Annotations { return nil }

// newEngine is Prometheus's PromQL engine with a server's defaults.
func newEngine(t *testing.T) *promql.Engine {
	ng := promql.NewEngine(promql.EngineOpts{
		MaxSamples:    10_000_000,
		Timeout:       time.Minute,
		LookbackDelta: 5 * time.Minute,
		Parser:        parser.NewParser(parser.Options{}),
	})
	t.Cleanup(func() { _ = ng.Close() })
	return ng
}

// instantQuery evaluates expr at at, as a rule evaluation would.
func instantQuery(t *testing.T, ng *promql.Engine, q storage.Queryable, expr string, at time.Time) promql.Vector {
	t.Helper()
	query, err := ng.NewInstantQuery(context.Background(), q, nil, expr, at)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	defer query.Close()
	res := query.Exec(context.Background())
	if res.Err != nil {
		t.Fatalf("%s at %s: %v", expr, at.Format(time.RFC3339Nano), res.Err)
	}
	vec, err := res.Vector()
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return vec
}
