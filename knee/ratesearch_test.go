package knee

import (
	"math"
	"strings"
	"testing"
	"time"

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
		{"a replica keeping the SLO to 0.86× tries 1, then five halvings, never low", 0.2, 5, 0.86,
			[]float64{1, 0.6, 0.8, 0.9, 0.85, 0.875}, 0.85},
		{"a replica keeping the SLO to 0.59× ends within a halving's width of it", 0.2, 5, 0.59,
			[]float64{1, 0.6, 0.4, 0.5, 0.55, 0.575}, 0.575},
		{"a replica keeping the SLO at the closed-loop knee's rate stops after one trial", 0.2, 5, 1,
			[]float64{1}, 1},
		{"a replica keeping the SLO only near low tries low last", 0.2, 3, 0.21,
			[]float64{1, 0.6, 0.4, 0.3, 0.2}, 0.2},
		{"a replica breaking the SLO at the low rate ends with no knee", 0.2, 2, 0.1,
			[]float64{1, 0.6, 0.4, 0.2}, 0},
		{"no halvings: 1 and low only", 0.3, 0, 0.5,
			[]float64{1, 0.3}, 0.3},
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

func TestPoissonSearchWithDefaultsFillsOnlyTheZeroFields(t *testing.T) {
	defaults := PoissonSearch{Warmup: time.Minute, Steady: 10 * time.Minute, Tick: 5 * time.Second,
		SLOWindow: 30 * time.Second, Low: 0.2, Steps: 5}
	got, err := PoissonSearch{Steady: 3 * time.Minute, Low: 0.5}.WithDefaults(defaults)
	if err != nil {
		t.Fatal(err)
	}
	want := PoissonSearch{Warmup: time.Minute, Steady: 3 * time.Minute, Tick: 5 * time.Second,
		SLOWindow: 30 * time.Second, Low: 0.5, Steps: 5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
}

func TestPoissonSearchValidateNamesTheBadSetting(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    PoissonSearch
		want string
	}{
		{"a negative warmup", PoissonSearch{Warmup: -time.Minute}, "open loop: warmup must be ≥ 0 (0 = default), got -1m0s"},
		{"a negative steady part", PoissonSearch{Steady: -time.Second}, "open loop: steady must be ≥ 0 (0 = default), got -1s"},
		{"a negative tick", PoissonSearch{Tick: -time.Second}, "open loop: tick must be ≥ 0 (0 = default), got -1s"},
		{"a negative SLO window", PoissonSearch{SLOWindow: -time.Second}, "open loop: SLO window must be ≥ 0 (0 = default), got -1s"},
		{"a low at the knee's rate", PoissonSearch{Low: 1}, "open loop: low must be in (0,1) as a multiple of the rate the search starts from (0 = default), got 1"},
		{"a low that is not a number", PoissonSearch{Low: math.NaN()}, "open loop: low must be in (0,1) as a multiple of the rate the search starts from (0 = default), got NaN"},
		{"negative steps", PoissonSearch{Steps: -1}, "open loop: steps must be ≥ 0 (0 = default), got -1"},
		{"a tick longer than the steady part", PoissonSearch{Steady: time.Second, Tick: 5 * time.Second},
			"open loop: tick 5s is longer than the steady part 1s, so the SLO would never be judged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate()
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if err := (PoissonSearch{}).Validate(); err != nil {
		t.Errorf("all zero (all defaults) should pass, got %v", err)
	}
}
