package measure

import (
	"testing"
	"time"
)

func TestRunawayNeedsTheGrowthAsAShareAndInRequests(t *testing.T) {
	r := Runaway{Growth: 0.6, Requests: 3}
	for _, tc := range []struct {
		first, last float64
		want        bool
	}{
		{10, 16, false},  // 60%: not past it
		{10, 16.5, true}, // 65% and 6.5 requests
		{2, 4.5, false},  // 125%, but 2.5 requests: a small count's chance swing
		{2, 5, true},     // 150% and 3 requests
		{40, 30, false},  // a queue that drained
		{0, 3, true},
	} {
		if got := r.RanAway(tc.first, tc.last); got != tc.want {
			t.Errorf("%g → %g: ran away %v, want %v", tc.first, tc.last, got, tc.want)
		}
	}
	if (Runaway{}).RanAway(1, 100) || (Runaway{}).Judged(time.Hour, time.Second) {
		t.Error("the zero Runaway judged a trial; it must turn the test off")
	}
	if d := DefaultRunaway; !d.Judged(time.Minute, 30*time.Second) || d.Judged(time.Minute, 31*time.Second) {
		t.Error("the sweep's test must be judged where the warm-up is twice a request's time in flight, and only there")
	}
}
