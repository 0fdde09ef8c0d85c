// Package promstore is an in-memory Prometheus storage of float series that
// Prometheus's own PromQL engine reads through its storage interfaces, so
// kneewatch can evaluate real PromQL (rule expressions, the window math it
// must equal) over series it recorded, without a server or a TSDB on disk.
// (Prometheus's TSDB would do the same, but its package pulls cloud
// service-discovery modules into go.mod.)
//
// It is used by tests and by the detection bench; the kneewatch binary does
// not import it.
package promstore

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// StaleNaN is Prometheus's staleness marker: a series that stopped being
// scraped ends there instead of lingering for the lookback delta.
var StaleNaN = math.Float64frombits(value.StaleNaN)

// Store holds float series, each appended in time order.
type Store struct {
	byKey  map[string]*series
	series []*series
}

type series struct {
	lset    labels.Labels
	samples []chunks.Sample
}

// New returns an empty store.
func New() *Store { return &Store{byKey: map[string]*series{}} }

// Add appends a sample at t (milliseconds); a series' samples must come in
// time order.
func (s *Store) Add(l labels.Labels, t int64, v float64) error {
	key := l.String()
	ms := s.byKey[key]
	if ms == nil {
		ms = &series{lset: l}
		s.byKey[key] = ms
		s.series = append(s.series, ms)
	}
	if n := len(ms.samples); n > 0 && ms.samples[n-1].T() >= t {
		return fmt.Errorf("sample for %s at %d is not after the previous one at %d", key, t, ms.samples[n-1].T())
	}
	ms.samples = append(ms.samples, floatSample{t: t, f: v})
	return nil
}

// Values returns the sample values of the series with exactly these labels
// (nil when there is none), for tests that inspect what was stored.
func (s *Store) Values(l labels.Labels) []float64 {
	ms := s.byKey[l.String()]
	if ms == nil {
		return nil
	}
	out := make([]float64, len(ms.samples))
	for i, x := range ms.samples {
		out[i] = x.F()
	}
	return out
}

// AddScrape stores a parsed exposition as a Prometheus server would after
// scraping it at at, each series with the target's labels added (job,
// instance, relabelled labels). Histograms and summaries become their
// _bucket/_sum/_count (or quantile) series.
func (s *Store) AddScrape(families map[string]*dto.MetricFamily, at time.Time, target map[string]string) error {
	t := at.UnixMilli()
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			b := labels.NewBuilder(labels.EmptyLabels())
			for _, lp := range m.GetLabel() {
				b.Set(lp.GetName(), lp.GetValue())
			}
			for k, v := range target {
				b.Set(k, v)
			}
			var err error
			put := func(metric string, v float64, extra ...string) {
				bb := labels.NewBuilder(b.Labels())
				bb.Set(labels.MetricName, metric)
				for i := 0; i+1 < len(extra); i += 2 {
					bb.Set(extra[i], extra[i+1])
				}
				if e := s.Add(bb.Labels(), t, v); e != nil && err == nil {
					err = e
				}
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
				hasInf := false
				for _, bk := range h.GetBucket() {
					hasInf = hasInf || math.IsInf(bk.GetUpperBound(), +1)
					put(name+"_bucket", float64(bk.GetCumulativeCount()), "le", FormatFloat(bk.GetUpperBound()))
				}
				if !hasInf { // client libraries leave the +Inf bucket implicit
					put(name+"_bucket", float64(h.GetSampleCount()), "le", "+Inf")
				}
				put(name+"_sum", h.GetSampleSum())
				put(name+"_count", float64(h.GetSampleCount()))
			case dto.MetricType_SUMMARY:
				sm := m.GetSummary()
				for _, q := range sm.GetQuantile() {
					put(name, q.GetValue(), "quantile", FormatFloat(q.GetQuantile()))
				}
				put(name+"_sum", sm.GetSampleSum())
				put(name+"_count", float64(sm.GetSampleCount()))
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// MarkStale ends, at at, every series whose labels match: it appends
// Prometheus's staleness marker, as a server does when a target's scrape
// fails or the target is gone, so the series vanish from instant queries
// at once instead of lingering for the lookback delta. Series whose last
// sample is not before at are left alone.
func (s *Store) MarkStale(at time.Time, match func(labels.Labels) bool) {
	t := at.UnixMilli()
	for _, ms := range s.series {
		if n := len(ms.samples); n > 0 && ms.samples[n-1].T() < t && match(ms.lset) {
			ms.samples = append(ms.samples, floatSample{t: t, f: StaleNaN})
		}
	}
}

// FormatFloat writes a label value the way Prometheus's text format does
// (le="0.5", le="+Inf").
func FormatFloat(f float64) string {
	switch {
	case math.IsInf(f, +1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Querier implements storage.Queryable.
func (s *Store) Querier(mint, maxt int64) (storage.Querier, error) {
	return &querier{s: s, mint: mint, maxt: maxt}, nil
}

// NewEngine is Prometheus's PromQL engine with a server's defaults.
func NewEngine() *promql.Engine {
	return promql.NewEngine(promql.EngineOpts{
		MaxSamples:    50_000_000,
		Timeout:       time.Minute,
		LookbackDelta: 5 * time.Minute,
		Parser:        parser.NewParser(parser.Options{}),
		// A subquery without a step steps at the evaluation interval, as in
		// Prometheus (its default global evaluation_interval is 1m; rules
		// here are evaluated every 15s).
		NoStepSubqueryIntervalFn: func(int64) int64 { return (15 * time.Second).Milliseconds() },
	})
}

// Instant evaluates expr at at, as a rule evaluation would.
func Instant(ng *promql.Engine, q storage.Queryable, expr string, at time.Time) (promql.Vector, error) {
	query, err := ng.NewInstantQuery(context.Background(), q, nil, expr, at)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", expr, err)
	}
	defer query.Close()
	res := query.Exec(context.Background())
	if res.Err != nil {
		return nil, fmt.Errorf("%s at %s: %w", expr, at.Format(time.RFC3339Nano), res.Err)
	}
	switch v := res.Value.(type) {
	case promql.Vector:
		return v, nil
	case promql.Scalar:
		return promql.Vector{{T: v.T, F: v.V}}, nil
	}
	return nil, fmt.Errorf("%s: result is a %s, not a vector", expr, res.Value.Type())
}

type floatSample struct {
	t int64
	f float64
}

func (x floatSample) T() int64                      { return x.t }
func (x floatSample) ST() int64                     { return 0 }
func (x floatSample) F() float64                    { return x.f }
func (x floatSample) H() *histogram.Histogram       { return nil }
func (x floatSample) FH() *histogram.FloatHistogram { return nil }
func (x floatSample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (x floatSample) Copy() chunks.Sample           { return x }

type querier struct {
	s          *Store
	mint, maxt int64
}

func (q *querier) Select(_ context.Context, sortSeries bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	var out []storage.Series
next:
	for _, sr := range q.s.series {
		for _, m := range ms {
			if !m.Matches(sr.lset.Get(m.Name)) {
				continue next
			}
		}
		// Only the samples in [mint, maxt]; the slice is shared, not copied.
		lo := sort.Search(len(sr.samples), func(i int) bool { return sr.samples[i].T() >= q.mint })
		hi := sort.Search(len(sr.samples), func(i int) bool { return sr.samples[i].T() > q.maxt })
		if lo < hi {
			out = append(out, storage.NewListSeries(sr.lset, sr.samples[lo:hi:hi]))
		}
	}
	if sortSeries {
		sort.Slice(out, func(i, j int) bool { return labels.Compare(out[i].Labels(), out[j].Labels()) < 0 })
	}
	return &seriesSet{series: out, i: -1}
}

func (q *querier) LabelValues(context.Context, string, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (q *querier) LabelNames(context.Context, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (q *querier) Close() error { return nil }

type seriesSet struct {
	series []storage.Series
	i      int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *seriesSet) At() storage.Series                { return s.series[s.i] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }
