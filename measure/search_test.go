package measure

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// curve is a synthetic replica: the SLO margin and output tokens/s at each
// concurrency.
type curve func(c int) (margin, tokensPerSecond float64)

// runSearch drives a Search against a curve and returns the levels it
// measured and the last good level.
func runSearch(t *testing.T, s *Search, f curve) (levels []int, lo int) {
	t.Helper()
	for {
		step, ok := s.Next()
		if !ok {
			break
		}
		c := step.Concurrency
		for _, seen := range levels {
			if seen == c {
				t.Fatalf("concurrency %d measured twice (levels %v)", c, levels)
			}
		}
		levels = append(levels, c)
		if len(levels) > 40 {
			t.Fatalf("the search does not end: %v", levels)
		}
		m, tput := f(c)
		s.Record(c, Outcome{Good: m <= 1, Margin: m, TokensPerSecond: tput})
	}
	lo, _ = s.Bracket()
	return levels, lo
}

// linearThroughput grows without saturating.
func linearThroughput(c int) float64 { return 100 * float64(c) }

func TestSearchFindsTheKneeWithinPrecisionInFewLevels(t *testing.T) {
	for _, tc := range []struct {
		name      string
		knee      float64 // where the margin crosses 1
		margin    func(c, knee float64) float64
		maxLevels int
	}{
		{"a margin linear in concurrency crossing at 26", 26.5, func(c, k float64) float64 { return 0.4 + 0.6*c/k }, 8},
		{"a margin linear in concurrency crossing at 12", 12.5, func(c, k float64) float64 { return 0.5 + 0.5*c/k }, 7},
		{"a convex margin (TTFT exploding past the knee) crossing at 29", 29.5, func(c, k float64) float64 { return 0.5 + 0.5*math.Pow(c/k, 6) }, 9},
		{"a cliff: flat, then far past the threshold, at 40", 40.5, func(c, k float64) float64 {
			if c <= k {
				return 0.6
			}
			return 5
		}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSearch(256, 0.1, 0)
			if err != nil {
				t.Fatal(err)
			}
			levels, lo := runSearch(t, s, func(c int) (float64, float64) {
				return tc.margin(float64(c), tc.knee), linearThroughput(c)
			})
			want := int(tc.knee)
			if lo > want || float64(lo) < 0.9*float64(want) {
				t.Errorf("knee %d, want within 10%% below %d (levels %v, %s)", lo, want, levels, s.Done())
			}
			if len(levels) > tc.maxLevels {
				t.Errorf("%d levels %v, want at most %d", len(levels), levels, tc.maxLevels)
			}
			if lo, hi := s.Bracket(); hi-lo > max(1, int(0.1*float64(lo))) {
				t.Errorf("final bracket [%d, %d) is wider than the precision", lo, hi)
			}
			if !strings.HasPrefix(s.Done(), "refined") || s.LowerBound() {
				t.Errorf("reason %q (lower bound %v), want a refined knee", s.Done(), s.LowerBound())
			}
		})
	}
}

func TestSearchStopsWhereTheSpecSaysTo(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxC       int
		maxLevels  int
		f          curve
		wantLevels []int
		wantLo     int
		reason     string
		lowerBound bool
	}{
		{
			name: "throughput gaining under 5% per doubling stops the doubling at the flat level",
			maxC: 256,
			f: func(c int) (float64, float64) {
				return 0.5, 1000 * math.Min(float64(c), 16) * (1 + 0.01*float64(c)/32)
			},
			wantLevels: []int{1, 2, 4, 8, 16, 32}, wantLo: 32, reason: "saturated: output tokens/s gained 0.5% from concurrency 16 to 32",
		},
		{
			name:       "reaching --max-concurrency with the SLO met ends with a lower bound",
			maxC:       20,
			f:          func(c int) (float64, float64) { return 0.5, linearThroughput(c) },
			wantLevels: []int{1, 2, 4, 8, 16, 20}, wantLo: 20, reason: "reached --max-concurrency 20", lowerBound: true,
		},
		{
			name:       "concurrency 1 breaking the SLO ends the search with no knee",
			maxC:       256,
			f:          func(c int) (float64, float64) { return 3, linearThroughput(c) },
			wantLevels: []int{1}, wantLo: 0, reason: "concurrency 1 already breaks the SLO",
		},
		{
			name:       "the level budget ends the refinement with the bracket reached",
			maxC:       256,
			maxLevels:  6,
			f:          func(c int) (float64, float64) { return float64(c) / 20.5, linearThroughput(c) },
			wantLevels: []int{1, 2, 4, 8, 16, 32}, wantLo: 16, reason: "level budget of 6 used up with the knee in [16, 32)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSearch(tc.maxC, 0.1, tc.maxLevels)
			if err != nil {
				t.Fatal(err)
			}
			s.StopWhenSaturated = true
			levels, lo := runSearch(t, s, tc.f)
			if len(levels) != len(tc.wantLevels) {
				t.Fatalf("levels %v, want %v", levels, tc.wantLevels)
			}
			for i := range levels {
				if levels[i] != tc.wantLevels[i] {
					t.Fatalf("levels %v, want %v", levels, tc.wantLevels)
				}
			}
			if lo != tc.wantLo {
				t.Errorf("last good level %d, want %d", lo, tc.wantLo)
			}
			if !strings.HasPrefix(s.Done(), tc.reason) {
				t.Errorf("reason %q, want it to start with %q", s.Done(), tc.reason)
			}
			if s.LowerBound() != tc.lowerBound {
				t.Errorf("lower bound %v, want %v", s.LowerBound(), tc.lowerBound)
			}
		})
	}
}

func TestSearchRejectsBadSettings(t *testing.T) {
	for _, tc := range []struct {
		maxC      int
		precision float64
		maxLevels int
		want      string
	}{
		{0, 0.1, 0, "max concurrency must be ≥ 1, got 0"},
		{8, 0, 0, "precision must be in (0,1), got 0"},
		{8, 1, 0, "precision must be in (0,1), got 1"},
		{8, 0.1, -1, "max levels must be ≥ 0, got -1"},
	} {
		if _, err := NewSearch(tc.maxC, tc.precision, tc.maxLevels); err == nil || err.Error() != tc.want {
			t.Errorf("NewSearch(%d, %v, %d) = %v, want %q", tc.maxC, tc.precision, tc.maxLevels, err, tc.want)
		}
	}
}

// screeningCurve is a replica whose margin crosses 1 at knee; levels at or
// below screenBelow stop on a screening window, and screenWrong levels
// screen as good but break when measured in full.
func runScreened(t *testing.T, s *Search, margin func(c int) float64, screenBelow float64, screenWrong map[int]bool) (steps []Step) {
	t.Helper()
	for {
		step, ok := s.Next()
		if !ok {
			return steps
		}
		steps = append(steps, step)
		if len(steps) > 40 {
			t.Fatalf("the search does not end: %v", steps)
		}
		c := step.Concurrency
		m := margin(c)
		if step.MayScreen && (m <= screenBelow || screenWrong[c]) {
			s.Record(c, Outcome{Good: true, Margin: min(m, screenBelow), TokensPerSecond: linearThroughput(c), Screened: true})
			continue
		}
		s.Record(c, Outcome{Good: m <= 1, Margin: m, TokensPerSecond: linearThroughput(c)})
	}
}

func TestSearchConfirmsAScreenedLevelBeforeTheKneeRestsOnIt(t *testing.T) {
	// A cliff at 8: levels 1–8 have margin 0.3 and screen, 9 and up break.
	cliff := func(c int) float64 {
		if c <= 8 {
			return 0.3
		}
		return 4
	}
	s, err := NewSearch(256, 0.1, 0)
	if err != nil {
		t.Fatal(err)
	}
	steps := runScreened(t, s, cliff, 0.5, nil)
	last := steps[len(steps)-1]
	if !last.Confirm || last.Concurrency != 8 {
		t.Errorf("last step %+v, want the full confirmation of 8 (steps %v)", last, steps)
	}
	if lo, hi := s.Bracket(); lo != 8 || hi != 9 {
		t.Errorf("bracket [%d, %d), want [8, 9)", lo, hi)
	}
	if s.KneeScreened() {
		t.Errorf("the knee rests on a screened level after its confirmation")
	}
	if got := s.Screened(); len(got) != 3 || got[2] != 4 {
		t.Errorf("screened levels %v, want [1 2 4] (8 confirmed, the rest past the break)", got)
	}
	if !strings.HasPrefix(s.Done(), "refined: the knee is in [8, 9)") {
		t.Errorf("reason %q", s.Done())
	}
}

func TestSearchRefinesBelowAScreenedLevelThatBreaksInFull(t *testing.T) {
	// The truth: margin crosses 1 at 5.5. Level 8 screened as good (a
	// lucky short window); 16 breaks; refinement converges on 8's side and
	// its confirmation breaks, so the search refines down to [5, 6).
	margin := func(c int) float64 { return float64(c) / 5.5 }
	s, err := NewSearch(256, 0.1, 0)
	if err != nil {
		t.Fatal(err)
	}
	steps := runScreened(t, s, margin, 0.5, map[int]bool{4: true, 8: true})
	if lo, hi := s.Bracket(); lo != 5 || hi != 6 {
		t.Errorf("bracket [%d, %d), want [5, 6) (steps %v)", lo, hi, steps)
	}
	confirmed := 0
	for _, st := range steps {
		if st.Confirm {
			confirmed++
		}
	}
	if confirmed == 0 {
		t.Errorf("no level was confirmed (steps %v)", steps)
	}
	if s.KneeScreened() {
		t.Errorf("the knee rests on a screened level")
	}
}

func TestSearchMeasuresPastTheBreakForTheCurve(t *testing.T) {
	s, err := NewSearch(256, 0.01, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.PastBreak = 1
	levels, lo := runSearch(t, s, func(c int) (float64, float64) { return float64(c) / 20.5, linearThroughput(c) })
	if lo != 20 {
		t.Errorf("knee %d, want 20 (levels %v)", lo, levels)
	}
	if levels[5] != 32 || levels[6] != 64 {
		t.Errorf("levels %v, want 32 (the break) then 64 (one past it)", levels)
	}
}

func TestSearchStoppingAtTheFirstBreakLeavesAnEstimateInsideItsBracket(t *testing.T) {
	for _, tc := range []struct {
		name           string
		knee           float64
		margin         func(c, knee float64) float64
		lo, hi         int
		estLo, estHigh float64 // where the estimate must land
	}{
		// Linear in concurrency: log-linear interpolation between 16
		// (0.4+0.6×16/26.5) and 32 lands near the truth.
		{"a linear margin crossing at 26.5", 26.5, func(c, k float64) float64 { return 0.4 + 0.6*c/k }, 16, 32, 24, 29},
		// Convex: the interpolation is pulled up by the far margin's log
		// less than a linear one would be, but stays in the bracket.
		{"a convex margin crossing at 12.5", 12.5, func(c, k float64) float64 { return 0.5 + 0.5*math.Pow(c/k, 6) }, 8, 16, 9, 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSearch(256, 0.1, 0)
			if err != nil {
				t.Fatal(err)
			}
			s.StopAtBreak = true
			levels, lo := runSearch(t, s, func(c int) (float64, float64) { return tc.margin(float64(c), tc.knee), linearThroughput(c) })
			if _, hi := s.Bracket(); lo != tc.lo || hi != tc.hi {
				t.Fatalf("bracket [%d, %d), want [%d, %d) (levels %v)", lo, hi, tc.lo, tc.hi, levels)
			}
			if want := []int{1, 2, 4, 8, 16, 32}[:len(levels)]; !slices.Equal(levels, want) || levels[len(levels)-1] != tc.hi {
				t.Errorf("levels %v, want the doublings up to the first break %d and nothing after it", levels, tc.hi)
			}
			if est := s.Estimate(); !(est >= tc.estLo && est <= tc.estHigh) {
				t.Errorf("estimate %.2f, want it in [%g, %g] (true crossing %g)", est, tc.estLo, tc.estHigh, tc.knee)
			}
			if !strings.HasPrefix(s.Done(), fmt.Sprintf("stopped after the first break: the knee is in [%d, %d)", tc.lo, tc.hi)) {
				t.Errorf("reason %q", s.Done())
			}
		})
	}
	t.Run("no confirmation of a screened last good level", func(t *testing.T) {
		s, err := NewSearch(256, 0.1, 0)
		if err != nil {
			t.Fatal(err)
		}
		s.StopAtBreak = true
		steps := runScreened(t, s, func(c int) float64 { return float64(c) / 5.5 }, 0.5, map[int]bool{4: true})
		for _, st := range steps {
			if st.Confirm {
				t.Errorf("a confirmation was asked for (steps %v)", steps)
			}
		}
		if !s.KneeScreened() {
			t.Errorf("the last good level was screened and the search should say so")
		}
	})
	t.Run("a break at concurrency 1 is no bracket", func(t *testing.T) {
		s, err := NewSearch(256, 0.1, 0)
		if err != nil {
			t.Fatal(err)
		}
		s.StopAtBreak = true
		runSearch(t, s, func(int) (float64, float64) { return 2, 10 })
		if lo, hi := s.Bracket(); lo != 0 || hi != 1 || s.Estimate() != 0 {
			t.Errorf("bracket [%d, %d), estimate %v; want [0, 1) and 0", lo, hi, s.Estimate())
		}
		if !strings.Contains(s.Done(), "already breaks") {
			t.Errorf("reason %q", s.Done())
		}
	})
}

func TestSearchStoppingAfterTheFirstBreakProbesInsideItsBracket(t *testing.T) {
	// The margin crosses 1 at 26.5 (linear). The doubling breaks at 32;
	// one probe inside [16, 32) lands near the crossing and moves one end.
	s, err := NewSearch(256, 0.1, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.StopAtBreak, s.BreakProbes = true, 1
	steps := runScreened(t, s, func(c int) float64 { return 0.4 + 0.6*float64(c)/26.5 }, 0.5, nil)
	var levels []int
	for _, st := range steps {
		if st.Confirm {
			t.Errorf("a confirmation was asked for (steps %v)", steps)
		}
		levels = append(levels, st.Concurrency)
	}
	if len(levels) != 7 || !slices.Equal(levels[:6], []int{1, 2, 4, 8, 16, 32}) || levels[6] <= 16 || levels[6] >= 32 {
		t.Fatalf("levels %v, want the doubling to 32 and one probe inside [16, 32)", levels)
	}
	lo, hi := s.Bracket()
	if p := levels[6]; !(lo == p && hi == 32 || lo == 16 && hi == p) {
		t.Errorf("bracket [%d, %d) after probing %d", lo, hi, levels[6])
	}
	if est := s.Estimate(); !(est >= 25 && est <= 28) {
		t.Errorf("estimate %.2f, want it near the crossing 26.5", est)
	}
	if !strings.HasPrefix(s.Done(), "stopped after the first break") {
		t.Errorf("reason %q", s.Done())
	}
}
