package knee

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSampleQuantileInterpolatesBetweenOrderStatistics(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.5, 5.5}, {0.9, 9.1}, {0.99, 9.91}, {1, 10}} {
		if got := SampleQuantile(xs, c.q); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("q%v = %v, want %v (numpy's default)", c.q, got, c.want)
		}
	}
	if got := SampleQuantile(nil, 0.99); got != 0 {
		t.Errorf("no values gave %v, want 0", got)
	}
}

func TestQuantileOfSelectsWhatASortWouldGive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		n := 1 + rng.IntN(300)
		xs := make([]float64, n)
		distinct := 1 + rng.IntN(n) // from all equal to all different
		for i := range xs {
			xs[i] = float64(rng.IntN(distinct)) * 0.001
		}
		for _, q := range []float64{0, 0.5, 0.9, 0.99, 1, rng.Float64()} {
			sorted := slices.Sorted(slices.Values(xs))
			want := SampleQuantile(sorted, q)
			got := QuantileOf(slices.Clone(xs), q)
			if got != want {
				t.Fatalf("trial %d: q%v of %d values = %v, want %v (a sort's)", trial, q, n, got, want)
			}
		}
	}
	if got := QuantileOf(nil, 0.99); got != 0 {
		t.Errorf("q0.99 of nothing = %v, want 0 as SampleQuantile", got)
	}
}
