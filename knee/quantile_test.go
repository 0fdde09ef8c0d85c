package knee

import "testing"

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
