package watch

import (
	"slices"
	"testing"

	"github.com/kneewatch/kneewatch/knee"
)

func concurrencies(ps []knee.Point) []float64 {
	var out []float64
	for _, p := range ps {
		out = append(out, p.Concurrency)
	}
	return out
}

// The curve series are bounded per profile whatever the profile holds.
func TestTheCurveIsThinnedEvenlyKeepingBothEndsAndOneSeriesPerConcurrency(t *testing.T) {
	var ps []knee.Point
	for c := 1; c <= 200; c++ {
		ps = append(ps, knee.Point{Concurrency: float64(c)})
	}
	got := concurrencies(thin(ps, maxCurvePoints))
	if len(got) != maxCurvePoints || got[0] != 1 || got[len(got)-1] != 200 || !slices.IsSorted(got) {
		t.Errorf("thin(1..200, %d) = %v: want %d sorted points from 1 to 200", maxCurvePoints, got, maxCurvePoints)
	}
	short := []knee.Point{{Concurrency: 1}, {Concurrency: 2}, {Concurrency: 2}, {Concurrency: 4}}
	if got := concurrencies(thin(short, maxCurvePoints)); !slices.Equal(got, []float64{1, 2, 4}) {
		t.Errorf("thin of a short curve with a repeated concurrency = %v, want [1 2 4]", got)
	}
}
