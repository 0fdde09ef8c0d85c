package knee

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
