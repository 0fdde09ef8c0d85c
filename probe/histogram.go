package probe

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Bucket edges of the probe histograms, in seconds, before the SLO
// threshold is added. TTFT spans a lone short prefill (a few ms) to a deep
// queue (tens of seconds); TPOT spans a fast decode step to a stall.
var (
	ttftBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 30}
	tpotBuckets = []float64{0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1}
)

// bucketsWith returns base with threshold added as an edge (when it is > 0
// and not already one), so the share of observations ≤ threshold is a
// bucket's count, exact, rather than interpolated within a bucket.
func bucketsWith(base []float64, threshold float64) []float64 {
	out := slices.Clone(base)
	if threshold > 0 && !slices.Contains(out, threshold) {
		out = append(out, threshold)
		slices.Sort(out)
	}
	return out
}

// histogram is a cumulative Prometheus histogram with fixed edges, kept as
// plain counts under the replica's lock and exported as a const metric.
type histogram struct {
	bounds []float64
	counts []uint64 // counts[i]: observations in (bounds[i-1], bounds[i]]
	count  uint64   // all observations, +Inf included
	sum    float64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds))}
}

func (h *histogram) observe(v float64) {
	h.count++
	h.sum += v
	if i, _ := slices.BinarySearch(h.bounds, v); i < len(h.bounds) {
		h.counts[i]++ // the first edge ≥ v: le is inclusive
	}
}

func (h *histogram) metric(desc *prometheus.Desc, labels ...string) (prometheus.Metric, error) {
	cumulative := make(map[float64]uint64, len(h.bounds))
	var n uint64
	for i, b := range h.bounds {
		n += h.counts[i]
		cumulative[b] = n
	}
	return prometheus.NewConstHistogram(desc, h.count, h.sum, cumulative, labels...)
}
