package collector

import (
	"fmt"
	"math"
	"slices"
	"sort"

	dto "github.com/prometheus/client_model/go"
)

// errPartialHistogram marks a histogram without its +Inf bucket, such as a
// truncated documentation example. Quantiles from it would be wrong, so the
// signal is rejected.
var errPartialHistogram = histErr(ProblemPartialHisto, `partial histogram: no le="+Inf" bucket`)

// histogramFromDTO validates one scraped histogram series and converts it.
func histogramFromDTO(h *dto.Histogram) (Histogram, error) {
	if h == nil || len(h.GetBucket()) == 0 {
		return Histogram{}, histErr(ProblemInvalidHisto, "histogram has no buckets")
	}
	buckets := make([]Bucket, 0, len(h.GetBucket()))
	for _, b := range h.GetBucket() {
		c := float64(b.GetCumulativeCount())
		if b.CumulativeCountFloat != nil {
			c = b.GetCumulativeCountFloat()
		}
		buckets = append(buckets, Bucket{UpperBound: b.GetUpperBound(), Count: c})
	}
	return histogramFromBuckets(buckets, h)
}

// histogramFromBuckets is histogramFromDTO for a series whose buckets are
// given apart (in line order, counts as read; the stream parser keeps them
// so rather than as client_model messages) and whose count and sum are in
// h. buckets is sorted in place and becomes the histogram's.
func histogramFromBuckets(buckets []Bucket, h *dto.Histogram) (Histogram, error) {
	if len(buckets) == 0 {
		return Histogram{}, histErr(ProblemInvalidHisto, "histogram has no buckets")
	}
	for _, b := range buckets {
		if math.IsNaN(b.UpperBound) {
			return Histogram{}, histErr(ProblemInvalidHisto, "bucket with le=NaN")
		}
		if c := b.Count; math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			return Histogram{}, histErr(ProblemNonFinite, "bucket le=%q has count %v", formatBound(b.UpperBound), c)
		}
	}
	slices.SortFunc(buckets, func(a, b Bucket) int {
		switch {
		case a.UpperBound < b.UpperBound:
			return -1
		case a.UpperBound > b.UpperBound:
			return +1
		}
		return 0
	})
	for i := 1; i < len(buckets); i++ {
		if buckets[i].UpperBound == buckets[i-1].UpperBound {
			return Histogram{}, histErr(ProblemDuplicateSeries, "bucket le=%q appears twice (duplicate series?)", formatBound(buckets[i].UpperBound))
		}
		if buckets[i].Count < buckets[i-1].Count {
			return Histogram{}, histErr(ProblemNonMonotonic, "cumulative count falls from %v at le=%q to %v at le=%q",
				buckets[i-1].Count, formatBound(buckets[i-1].UpperBound), buckets[i].Count, formatBound(buckets[i].UpperBound))
		}
	}
	last := buckets[len(buckets)-1]
	if !math.IsInf(last.UpperBound, +1) {
		return Histogram{}, errPartialHistogram
	}
	out := Histogram{Buckets: buckets, Count: last.Count, Sum: math.NaN()}
	// _count is what users divide _sum by; prefer it when present. The +Inf
	// bucket is what quantiles use, and is kept in Buckets either way.
	switch {
	case h.SampleCountFloat != nil:
		out.Count = h.GetSampleCountFloat()
	case h.SampleCount != nil:
		out.Count = float64(h.GetSampleCount())
	}
	// A non-finite _sum or _count is as good as none: kept, it would
	// poison every mean and every accumulated sum from here on.
	if h.SampleSum != nil && !math.IsNaN(h.GetSampleSum()) && !math.IsInf(h.GetSampleSum(), 0) {
		out.Sum = h.GetSampleSum()
	}
	if math.IsNaN(out.Count) || math.IsInf(out.Count, 0) || out.Count < 0 {
		out.Count = last.Count
	}
	return out, nil
}

// addHistogram returns a+b bucket by bucket. Both must have the same bounds:
// data-parallel engines of one replica are configured alike, and merging
// different layouts would invent counts for bounds one side never had.
func addHistogram(a, b Histogram) (Histogram, error) {
	if len(a.Buckets) != len(b.Buckets) {
		return Histogram{}, fmt.Errorf("series have different bucket layouts (%d vs %d buckets)", len(a.Buckets), len(b.Buckets))
	}
	out := Histogram{Buckets: make([]Bucket, len(a.Buckets)), Count: a.Count + b.Count, Sum: a.Sum + b.Sum}
	for i := range a.Buckets {
		if a.Buckets[i].UpperBound != b.Buckets[i].UpperBound {
			return Histogram{}, fmt.Errorf("series have different bucket bounds (le=%q vs le=%q)",
				formatBound(a.Buckets[i].UpperBound), formatBound(b.Buckets[i].UpperBound))
		}
		out.Buckets[i] = Bucket{UpperBound: a.Buckets[i].UpperBound, Count: a.Buckets[i].Count + b.Buckets[i].Count}
	}
	return out, nil
}

// smallDeltaTolerance is the relative difference below which PromQL treats
// two neighbouring bucket counts as equal (floating point noise).
const smallDeltaTolerance = 1e-12

// minNormalFloat64 is the smallest positive normal float64.
var minNormalFloat64 = math.Float64frombits(0x0010000000000000)

// nearlyEqual reports whether a and b differ by less than eps relative to
// their magnitude, the comparison PromQL uses for bucket counts.
func nearlyEqual(a, b, eps float64) bool {
	if a == b {
		return true
	}
	absSum := math.Abs(a) + math.Abs(b)
	diff := math.Abs(a - b)
	if a == 0 || b == 0 || absSum < minNormalFloat64 {
		return diff < eps*minNormalFloat64
	}
	return diff/math.Min(absSum, math.MaxFloat64) < eps
}

// bucketQuantile is PromQL's histogram_quantile for classic buckets. The
// buckets must be sorted by bound with no duplicates; they are modified in
// place. Rules, as in Prometheus:
//   - NaN when there is no +Inf bucket, fewer than two buckets, or zero
//     observations;
//   - counts that fall between neighbouring buckets are lifted to the
//     running maximum (the "envelope"), and relative differences below
//     1e-12 are treated as equal;
//   - a rank in the +Inf bucket returns the highest finite bound (and
//     inInfBucket, since the true value is only known to be above it);
//   - a rank in the first bucket interpolates from 0, unless that bucket's
//     bound is ≤ 0, which is then returned as is;
//   - otherwise linear interpolation inside the bucket holding the rank.
func bucketQuantile(q float64, buckets []Bucket) (value float64, inInfBucket bool) {
	switch {
	case math.IsNaN(q):
		return math.NaN(), false
	case q < 0:
		return math.Inf(-1), false
	case q > 1:
		return math.Inf(+1), false
	}
	if len(buckets) < 2 || !math.IsInf(buckets[len(buckets)-1].UpperBound, +1) {
		return math.NaN(), false
	}
	makeMonotonic(buckets)
	observations := buckets[len(buckets)-1].Count
	if observations == 0 {
		return math.NaN(), false
	}
	rank := q * observations
	b := sort.Search(len(buckets)-1, func(i int) bool { return buckets[i].Count >= rank })
	switch {
	case b == len(buckets)-1:
		return buckets[len(buckets)-2].UpperBound, true
	case b == 0 && buckets[0].UpperBound <= 0:
		return buckets[0].UpperBound, false
	}
	lower, count := 0.0, buckets[b].Count
	if b > 0 {
		lower = buckets[b-1].UpperBound
		count -= buckets[b-1].Count
		rank -= buckets[b-1].Count
	}
	return lower + (buckets[b].UpperBound-lower)*(rank/count), false
}

// makeMonotonic applies PromQL's envelope: it ignores relative differences
// below smallDeltaTolerance and lifts any decrease to the previous count.
func makeMonotonic(buckets []Bucket) {
	prev := buckets[0].Count
	for i := 1; i < len(buckets); i++ {
		curr := buckets[i].Count
		if curr == prev {
			continue
		}
		if nearlyEqual(prev, curr, smallDeltaTolerance) || curr < prev {
			buckets[i].Count = prev
			continue
		}
		prev = curr
	}
}

// bucketFractionBelow is PromQL's histogram_fraction(-Inf, upper, buckets):
// the share of observations ≤ upper, interpolating linearly inside the
// bucket that holds upper. As in Prometheus, nothing is interpolated inside
// the +Inf bucket (a threshold above the highest finite bound counts only
// observations up to that bound), the first bucket starts at 0 unless its
// bound is ≤ 0, and the result is NaN without a +Inf bucket or with zero
// observations. exact is true when upper is one of the bucket bounds, so no
// interpolation was needed.
func bucketFractionBelow(upper float64, buckets []Bucket) (fraction float64, exact bool) {
	if len(buckets) == 0 || !math.IsInf(buckets[len(buckets)-1].UpperBound, +1) || math.IsNaN(upper) {
		return math.NaN(), false
	}
	count := buckets[len(buckets)-1].Count
	if count == 0 {
		return math.NaN(), false
	}
	lowerBound := 0.0
	if buckets[0].UpperBound <= 0 {
		lowerBound = math.Inf(-1)
	}
	var rank, upperRank float64
	found := false
	for i, b := range buckets {
		if b.UpperBound == upper {
			exact = true
		}
		if i > 0 {
			lowerBound = buckets[i-1].UpperBound
		}
		if lowerBound >= upper {
			upperRank, found = rank, true
			break
		}
		if b.UpperBound > upper {
			if math.IsInf(lowerBound, -1) {
				upperRank = b.Count
			} else {
				upperRank = rank + (b.Count-rank)*(upper-lowerBound)/(b.UpperBound-lowerBound)
			}
			found = true
			break
		}
		rank = b.Count
	}
	if !found || upperRank > count {
		upperRank = count
	}
	return upperRank / count, exact
}

// bucketShareBounds bounds the share of observations at or below threshold
// by what the buckets can say without guessing: lower is the share at or
// below the highest edge ≤ threshold (0 below the first edge), upper the
// share at or below the lowest edge ≥ threshold (1 above the highest
// finite edge, where only the +Inf bucket is left). The two are equal when
// threshold is an edge. Counts are read through PromQL's envelope (a count
// that falls is lifted to the running maximum), so rate noise cannot make
// a bound fall. NaN, NaN without a +Inf bucket or observations.
func bucketShareBounds(threshold float64, buckets []Bucket) (lower, upper float64) {
	if len(buckets) == 0 || !math.IsInf(buckets[len(buckets)-1].UpperBound, +1) || math.IsNaN(threshold) {
		return math.NaN(), math.NaN()
	}
	total := 0.0
	for _, b := range buckets {
		total = max(total, b.Count)
	}
	if !(total > 0) || math.IsInf(total, 0) {
		return math.NaN(), math.NaN()
	}
	env, lo, hi := 0.0, 0.0, math.NaN()
	for _, b := range buckets {
		env = max(env, b.Count)
		if b.UpperBound <= threshold {
			lo = env
		}
		if b.UpperBound >= threshold {
			hi = env
			break
		}
	}
	return lo / total, hi / total
}
