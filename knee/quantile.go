package knee

import "slices"

// SampleQuantile is the q-quantile of sorted (ascending) per-request
// latencies, interpolating linearly between order statistics (the R-7
// definition, numpy's default); 0 for no values. The simulator's ground
// truth, the sweep and the detection bench all measure a point's
// percentiles with it, so their knees are comparable.
func SampleQuantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	h := q * float64(n-1)
	i := int(h)
	if i >= n-1 {
		return sorted[n-1]
	}
	return sorted[i] + (h-float64(i))*(sorted[i+1]-sorted[i])
}

// QuantileOf is SampleQuantile of xs as if they were sorted, by selection
// rather than a sort (linear time on average): the bench's ground truth
// takes a windowed p99 over thousands of requests at every scrape tick, and
// sorting each window was an eighth of its run. It reorders xs. xs must
// hold no NaN.
func QuantileOf(xs []float64, q float64) float64 {
	n := len(xs)
	if n == 0 {
		return 0
	}
	h := q * float64(n-1)
	i := int(h)
	if i >= n-1 {
		return slices.Max(xs)
	}
	lo := selectKth(xs, i)
	// Selection leaves every value after i at least xs[i]: the next order
	// statistic is their minimum.
	hi := slices.Min(xs[i+1:])
	return lo + (h-float64(i))*(hi-lo)
}

// selectKth reorders xs so that xs[k] is the value a sort would put there,
// nothing before it is larger and nothing after it smaller, and returns it.
// Quickselect with a median-of-three pivot and a three-way partition (many
// latencies are equal: a decode step's worth).
func selectKth(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		a, b, c := xs[lo], xs[lo+(hi-lo)/2], xs[hi]
		p := max(min(a, b), min(max(a, b), c)) // the median of the three
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch {
			case xs[i] < p:
				xs[lt], xs[i] = xs[i], xs[lt]
				lt++
				i++
			case xs[i] > p:
				xs[i], xs[gt] = xs[gt], xs[i]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return p
		}
	}
	return xs[k]
}
