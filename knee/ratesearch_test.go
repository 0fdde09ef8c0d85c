package knee

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// runRateSearch drives a RateSearch with a replica that keeps the SLO up to
// a fraction of the closed-loop knee's rate, returning the fractions tried.
func runRateSearch(t *testing.T, s *RateSearch, keepsUpTo float64) []float64 {
	t.Helper()
	var tried []float64
	for {
		f, ok := s.Next()
		if !ok {
			return tried
		}
		tried = append(tried, f)
		if len(tried) > 20 {
			t.Fatalf("the search does not end: %v", tried)
		}
		s.Record(f <= keepsUpTo)
	}
}

func TestRateSearchBisectsBetweenLowAndTheClosedLoopKneesRate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		low       float64
		steps     int
		keepsUpTo float64
		tried     []float64
		best      float64
	}{
		{"a replica keeping the SLO to 0.86× tries low, 1, then five halvings", 0.2, 5, 0.86,
			[]float64{0.2, 1, 0.6, 0.8, 0.9, 0.85, 0.875}, 0.85},
		{"a replica keeping the SLO to 0.59× ends within a halving's width of it", 0.2, 5, 0.59,
			[]float64{0.2, 1, 0.6, 0.4, 0.5, 0.55, 0.575}, 0.575},
		{"a replica keeping the SLO at the closed-loop knee's rate stops after two trials", 0.2, 5, 1,
			[]float64{0.2, 1}, 1},
		{"a replica breaking the SLO at the low rate stops at once with no knee", 0.2, 5, 0.1,
			[]float64{0.2}, 0},
		{"no halvings: low and 1 only", 0.3, 0, 0.5,
			[]float64{0.3, 1}, 0.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewRateSearch(tc.low, tc.steps)
			if err != nil {
				t.Fatal(err)
			}
			tried := runRateSearch(t, s, tc.keepsUpTo)
			if diff := cmp.Diff(tc.tried, tried, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("fractions tried (-want +got):\n%s", diff)
			}
			if math.Abs(s.Best()-tc.best) > 1e-9 {
				t.Errorf("best %g, want %g", s.Best(), tc.best)
			}
			if s.Done() == "" {
				t.Error("the search ended without saying why")
			}
			if len(tried) > s.MaxTrials() {
				t.Errorf("%d trials, more than MaxTrials %d", len(tried), s.MaxTrials())
			}
		})
	}
}

func TestRateSearchRejectsBadSettings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		low   float64
		steps int
		want  string
	}{
		{"a low end of 0", 0, 5, "low end must be in (0,1)"},
		{"a low end at the knee's rate", 1, 5, "low end must be in (0,1)"},
		{"negative halvings", 0.2, -1, "halvings must be ≥ 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewRateSearch(tc.low, tc.steps); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
