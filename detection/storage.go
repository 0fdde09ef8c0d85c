package detection

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// store is an in-memory Prometheus storage for one run: the scraped series
// and the recording rules' output, appended in time order and read by
// Prometheus's PromQL engine through its own storage interfaces. (The TSDB
// would do the same, but its package pulls cloud service-discovery modules
// into go.mod.)
type store struct {
	byKey  map[string]*memSeries
	series []*memSeries
}

type memSeries struct {
	lset    labels.Labels
	samples []chunks.Sample
}

func newStore() *store { return &store{byKey: map[string]*memSeries{}} }

// staleNaN is Prometheus's staleness marker: a series that stopped being
// scraped (or returned by a rule) ends there instead of lingering for the
// 5-minute lookback.
var staleNaN = math.Float64frombits(value.StaleNaN)

// add appends a sample; samples of one series must come in time order.
func (s *store) add(l labels.Labels, t int64, v float64) error {
	key := l.String()
	ms := s.byKey[key]
	if ms == nil {
		ms = &memSeries{lset: l}
		s.byKey[key] = ms
		s.series = append(s.series, ms)
	}
	if n := len(ms.samples); n > 0 && ms.samples[n-1].T() >= t {
		return fmt.Errorf("sample for %s at %d is not after the previous one at %d", key, t, ms.samples[n-1].T())
	}
	ms.samples = append(ms.samples, floatSample{t: t, f: v})
	return nil
}

// Querier implements storage.Queryable.
func (s *store) Querier(mint, maxt int64) (storage.Querier, error) {
	return &querier{s: s, mint: mint, maxt: maxt}, nil
}

// floatSample is one float sample of a list series.
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
	s          *store
	mint, maxt int64
}

func (q *querier) Select(_ context.Context, sortSeries bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	var out []storage.Series
next:
	for _, series := range q.s.series {
		for _, m := range ms {
			if !m.Matches(series.lset.Get(m.Name)) {
				continue next
			}
		}
		// Only the samples in [mint, maxt]; the slice is shared, not copied.
		lo := sort.Search(len(series.samples), func(i int) bool { return series.samples[i].T() >= q.mint })
		hi := sort.Search(len(series.samples), func(i int) bool { return series.samples[i].T() > q.maxt })
		if lo < hi {
			out = append(out, storage.NewListSeries(series.lset, series.samples[lo:hi:hi]))
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
