package collector

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Quantile is a windowed histogram quantile.
type Quantile struct {
	Value float64
	// AboveHighestBound is true when the quantile fell into the +Inf
	// bucket: Value is then the highest finite bucket bound (as PromQL
	// returns it) and the true quantile is only known to be above it.
	AboveHighestBound bool
}

// Attainment is the share of a histogram's observations in the window at
// or below a threshold, such as the share of requests meeting a TTFT SLO.
type Attainment struct {
	// Ratio is PromQL's histogram_fraction: inside a bucket it interpolates
	// linearly, as if observations spread evenly over the bucket. They
	// rarely do: at light load every vLLM TPOT sits near 10 ms, in the
	// (0.01, 0.025] bucket, and a 23 ms threshold interpolates to 0.867
	// when every request met it. So kneewatch judges SLOs by Upper, never
	// by Ratio; Ratio is kept to match a user's own Prometheus.
	Ratio float64
	// Lower and Upper are what the buckets support without guessing: the
	// shares at or below the bucket edges just under and just over the
	// threshold (see bucketShareBounds). The true share lies between them.
	Lower, Upper float64
	// Exact is true only when the threshold is one of the histogram's
	// bucket bounds; then Lower, Upper and Ratio agree.
	Exact bool
}

// bucketRates returns the per-bucket rates of a histogram signal over the
// window: PromQL's rate(x_bucket[width]), each bucket (each le) its own
// counter with its own reset handling and extrapolation, buckets whose rate
// cannot be computed (fewer than two samples) left out, as PromQL leaves
// them out.
func (w *Window) bucketRates(sig Signal, at time.Time) ([]Bucket, error) {
	if sig.Kind() != KindHistogram {
		return nil, fmt.Errorf("%s is not a histogram", sig)
	}
	snaps, start, end := w.selected(at)
	var (
		bounds []float64 // every le seen, in first-seen order
		series [][]point // per bound
		seen   bool
		// backing holds every bucket's points: each bucket has at most one
		// point per snapshot, so each gets a fixed share of it, and one
		// allocation serves the usual layout (the first snapshot's).
		backing []point
	)
	for _, s := range snaps {
		h, ok := s.Histograms[sig]
		if !ok {
			continue
		}
		if !seen {
			// The window's buffers, kept for its next evaluation.
			if need := len(h.Buckets) * len(snaps); cap(w.scratch.backing) < need {
				w.scratch.backing = make([]point, 0, need)
			}
			backing, bounds, series = w.scratch.backing[:0], w.scratch.bounds[:0], w.scratch.series[:0]
		}
		seen = true
		t := s.Time.UnixMilli()
		for i, b := range h.Buckets {
			// Layouts rarely change, so the bucket is usually at the same
			// position as before; otherwise search, or start a new series.
			j := i
			if j >= len(bounds) || bounds[j] != b.UpperBound {
				j = slices.Index(bounds, b.UpperBound)
			}
			if j < 0 {
				j = len(bounds)
				bounds = append(bounds, b.UpperBound)
				if len(backing)+len(snaps) > cap(backing) {
					backing = make([]point, 0, len(h.Buckets)*len(snaps))
				}
				series = append(series, backing[len(backing):len(backing):len(backing)+len(snaps)])
				backing = backing[:len(backing)+len(snaps)]
			}
			series[j] = append(series[j], point{t, b.Count})
		}
	}
	if !seen {
		return nil, fmt.Errorf("%s: %w", sig, ErrMissingSignal)
	}
	w.scratch.bounds, w.scratch.series = bounds, series
	if cap(backing) > cap(w.scratch.backing) {
		w.scratch.backing = backing[:0]
	}
	seconds := w.width.Seconds()
	rates := make([]Bucket, 0, len(bounds))
	for i, ub := range bounds {
		if d, ok := extrapolatedDelta(series[i], start, end, true); ok {
			rates = append(rates, Bucket{UpperBound: ub, Count: d / seconds})
		}
	}
	if len(rates) == 0 {
		return nil, fmt.Errorf("%s: %w (need 2 scrapes of the histogram)", sig, ErrTooFewSamples)
	}
	slices.SortFunc(rates, func(a, b Bucket) int {
		switch {
		case a.UpperBound < b.UpperBound:
			return -1
		case a.UpperBound > b.UpperBound:
			return +1
		}
		return 0
	})
	return rates, nil
}

// HistogramQuantile is PromQL's histogram_quantile(q, rate(x_bucket[width]))
// evaluated at at, for one replica's histogram signal. q must be in [0, 1].
// No observations in the window, or no +Inf bucket rate, give an error
// (PromQL's NaN), not a number.
func (w *Window) HistogramQuantile(sig Signal, q float64, at time.Time) (Quantile, error) {
	if math.IsNaN(q) || q < 0 || q > 1 {
		return Quantile{}, fmt.Errorf("quantile %v of %s: must be between 0 and 1", q, sig)
	}
	rates, err := w.bucketRates(sig, at)
	if err != nil {
		return Quantile{}, err
	}
	return quantileOfRates(sig, q, rates)
}

// quantileOfRates is HistogramQuantile on bucket rates from bucketRates.
// It lifts the rates to their monotonic envelope in place, as PromQL does;
// the envelope of an envelope is itself, so the same rates serve several
// quantiles.
func quantileOfRates(sig Signal, q float64, rates []Bucket) (Quantile, error) {
	if !math.IsInf(rates[len(rates)-1].UpperBound, +1) || len(rates) < 2 {
		return Quantile{}, fmt.Errorf("quantile of %s: %w (no +Inf bucket rate)", sig, ErrTooFewSamples)
	}
	v, inInf := bucketQuantile(q, rates)
	if math.IsNaN(v) {
		return Quantile{}, fmt.Errorf("quantile of %s: %w", sig, ErrNoObservations)
	}
	return Quantile{Value: v, AboveHighestBound: inInf}, nil
}

// SLOAttainment is PromQL's histogram_fraction(-Inf, threshold,
// rate(x_bucket[width])) evaluated at at: the share of observations in the
// window at or below threshold (see Attainment for the interpolation).
func (w *Window) SLOAttainment(sig Signal, threshold float64, at time.Time) (Attainment, error) {
	if math.IsNaN(threshold) || math.IsInf(threshold, 0) {
		return Attainment{}, fmt.Errorf("attainment of %s: threshold %v is not a finite number", sig, threshold)
	}
	rates, err := w.bucketRates(sig, at)
	if err != nil {
		return Attainment{}, err
	}
	return attainmentOfRates(sig, threshold, rates)
}

// attainmentOfRates is SLOAttainment on bucket rates from bucketRates,
// which it does not modify.
func attainmentOfRates(sig Signal, threshold float64, rates []Bucket) (Attainment, error) {
	if !math.IsInf(rates[len(rates)-1].UpperBound, +1) {
		return Attainment{}, fmt.Errorf("attainment of %s: %w (no +Inf bucket rate)", sig, ErrTooFewSamples)
	}
	ratio, exact := bucketFractionBelow(threshold, rates)
	if math.IsNaN(ratio) {
		return Attainment{}, fmt.Errorf("attainment of %s: %w", sig, ErrNoObservations)
	}
	lower, upper := bucketShareBounds(threshold, rates)
	return Attainment{Ratio: ratio, Lower: lower, Upper: upper, Exact: exact}, nil
}

// HistogramMean is rate(x_sum[width]) / rate(x_count[width]): the mean
// observation in the window.
func (w *Window) HistogramMean(sig Signal, at time.Time) (float64, error) {
	if sig.Kind() != KindHistogram {
		return 0, fmt.Errorf("%s is not a histogram", sig)
	}
	snaps, start, end := w.selected(at)
	var sums, counts []point
	for _, s := range snaps {
		h, ok := s.Histograms[sig]
		if !ok {
			continue
		}
		t := s.Time.UnixMilli()
		if !math.IsNaN(h.Sum) {
			sums = append(sums, point{t, h.Sum})
		}
		counts = append(counts, point{t, h.Count})
	}
	if len(counts) == 0 {
		return 0, fmt.Errorf("%s: %w", sig, ErrMissingSignal)
	}
	sum, okS := extrapolatedDelta(sums, start, end, true)
	count, okC := extrapolatedDelta(counts, start, end, true)
	if !okS || !okC {
		return 0, fmt.Errorf("mean of %s: %w (need 2 scrapes with _sum and _count)", sig, ErrTooFewSamples)
	}
	if count == 0 {
		return 0, fmt.Errorf("mean of %s: %w", sig, ErrNoObservations)
	}
	return sum / count, nil
}

// HistogramSumRate is the rate of a histogram's _sum over the span its
// samples cover, as SampledRate reads a counter: rate(x_sum[width]) while
// the samples reach back to the window's start. For a latency histogram
// recorded as each request finishes it is Little's law's busy time: the
// mean number of those requests in flight over the window.
func (w *Window) HistogramSumRate(sig Signal, at time.Time) (float64, error) {
	if sig.Kind() != KindHistogram {
		return 0, fmt.Errorf("%s is not a histogram", sig)
	}
	snaps, start, end := w.selected(at)
	var sums []point
	for _, s := range snaps {
		if h, ok := s.Histograms[sig]; ok && !math.IsNaN(h.Sum) && !math.IsInf(h.Sum, 0) {
			sums = append(sums, point{s.Time.UnixMilli(), h.Sum})
		}
	}
	if len(sums) < 2 {
		return 0, fmt.Errorf("rate of %s's sum: %w (have %d, need 2)", sig, ErrTooFewSamples, len(sums))
	}
	first, last := sums[0], sums[len(sums)-1]
	sampled := float64(last.t-first.t) / 1000
	if avgStep := sampled / float64(len(sums)-1); float64(first.t-start)/1000 < avgStep*1.1 {
		d, _ := extrapolatedDelta(sums, start, end, true)
		return d / w.width.Seconds(), nil
	}
	delta := last.v - first.v
	for i := 1; i < len(sums); i++ {
		if sums[i].v < sums[i-1].v {
			delta += sums[i-1].v
		}
	}
	return delta / sampled, nil
}
