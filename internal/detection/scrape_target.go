package detection

import (
	"maps"
	"math"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// scrapeTarget is one Prometheus scrape job in virtual time: it stores each
// scrape's samples with the target labels Prometheus would attach (job,
// instance and any relabeled ones), and staleness markers for series that
// vanished since the previous scrape, as Prometheus's scrape loop does.
type scrapeTarget struct {
	store  *store
	target labels.Labels
	last   map[string]labels.Labels // series of the previous scrape
}

func newScrapeTarget(s *store, targetLabels ...string) *scrapeTarget {
	return &scrapeTarget{store: s, target: labels.FromStrings(targetLabels...), last: map[string]labels.Labels{}}
}

// ingest stores one scrape of mfs taken at at.
func (st *scrapeTarget) ingest(at time.Time, mfs map[string]*dto.MetricFamily) error {
	ts := at.UnixMilli()
	seen := make(map[string]labels.Labels, len(st.last))
	add := func(name string, m *dto.Metric, v float64, extra ...string) error {
		b := labels.NewBuilder(st.target)
		b.Set(model.MetricNameLabel, name)
		for _, lp := range m.GetLabel() {
			// Target labels win over scraped ones, as with honor_labels: false
			// (Prometheus would rename the scraped one to exported_<name>).
			if st.target.Has(lp.GetName()) {
				b.Set("exported_"+lp.GetName(), lp.GetValue())
				continue
			}
			b.Set(lp.GetName(), lp.GetValue())
		}
		for i := 0; i+1 < len(extra); i += 2 {
			b.Set(extra[i], extra[i+1])
		}
		l := b.Labels()
		seen[l.String()] = l
		return st.store.Add(l, ts, v)
	}
	for _, name := range slices.Sorted(maps.Keys(mfs)) {
		mf := mfs[name]
		for _, m := range mf.GetMetric() {
			var err error
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				err = add(name, m, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				err = add(name, m, m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				err = add(name, m, m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					if err = add(name+"_bucket", m, float64(b.GetCumulativeCount()), model.BucketLabel, formatBound(b.GetUpperBound())); err != nil {
						break
					}
				}
				if err == nil && !hasInfBucket(h) {
					err = add(name+"_bucket", m, float64(h.GetSampleCount()), model.BucketLabel, "+Inf")
				}
				if err == nil {
					err = add(name+"_sum", m, h.GetSampleSum())
				}
				if err == nil {
					err = add(name+"_count", m, float64(h.GetSampleCount()))
				}
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					if err = add(name, m, q.GetValue(), model.QuantileLabel, formatBound(q.GetQuantile())); err != nil {
						break
					}
				}
				if err == nil {
					err = add(name+"_sum", m, s.GetSampleSum())
				}
				if err == nil {
					err = add(name+"_count", m, float64(s.GetSampleCount()))
				}
			}
			if err != nil {
				return err
			}
		}
	}
	for key, l := range st.last {
		if _, ok := seen[key]; !ok {
			if err := st.store.Add(l, ts, staleNaN); err != nil {
				return err
			}
		}
	}
	st.last = seen
	return nil
}

// formatBound writes an le or quantile label value the way Prometheus 3
// stores it (OpenMetrics floats: 1 becomes "1.0"), so selectors such as
// le="1.0" match as they do on a real server.
func formatBound(f float64) string {
	if math.IsInf(f, +1) {
		return "+Inf"
	}
	return labels.FormatOpenMetricsFloat(f)
}

func hasInfBucket(h *dto.Histogram) bool {
	bs := h.GetBucket()
	return len(bs) > 0 && math.IsInf(bs[len(bs)-1].GetUpperBound(), +1)
}
