package measure

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

func TestBinomialTailMatchesExactSums(t *testing.T) {
	// Exact values from rational arithmetic (Python's fractions).
	for _, tc := range []struct {
		n, k int
		p    float64
		want float64
	}{
		{200, 5, 0.01, 0.05174626363078589},
		{20, 3, 0.01, 0.0010035761681001169},
		{1000, 20, 0.01, 0.0032883597877274664},
		{50, 1, 0.01, 0.39499393286246337},
		{10, 0, 0.5, 1},
		{10, 11, 0.5, 0},
		{10, 10, 0.5, 1.0 / 1024},
	} {
		if got := BinomialTail(tc.n, tc.k, tc.p); math.Abs(got-tc.want) > 1e-12*math.Max(1, tc.want) && math.Abs(got/tc.want-1) > 1e-9 {
			t.Errorf("BinomialTail(%d, %d, %g) = %.17g, want %.17g", tc.n, tc.k, tc.p, got, tc.want)
		}
	}
}

var testSLO = knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(50 * time.Millisecond), Quantile: 0.99}

// level draws a window whose requests exceed the TTFT threshold with
// probability slowShare and otherwise sit at ttftMargin of it.
func level(rng *rand.Rand, slowShare, ttftMargin float64) func() Sample {
	return func() Sample {
		ttft := time.Duration(ttftMargin * float64(time.Second) * (0.5 + 0.5*rng.Float64()))
		if rng.Float64() < slowShare {
			ttft = 2 * time.Second
		}
		return Sample{TTFT: ttft, TPOT: 10 * time.Millisecond, HasTPOT: true, OutputTokens: 100}
	}
}

func TestEarlyBreakRarelyCutsALevelWithinItsSLO(t *testing.T) {
	// A level exactly at its SLO's edge (1% of requests slow) filling a
	// 200-request window, looked at after every request: the share cut
	// short as breaking is the sequential test's real size.
	rng := rand.New(rand.NewPCG(1, 2))
	const levels = 20000
	cut := 0
	for range levels {
		tally := DefaultEarly.Start(testSLO, 16, false)
		next := level(rng, 0.01, 0.5)
		for range 200 {
			if tally.Add(next()) == Breaks {
				cut++
				break
			}
		}
	}
	share := float64(cut) / levels
	t.Logf("levels at the SLO's edge cut short as breaking: %d of %d (%.4f; alpha %g)", cut, levels, share, DefaultEarly.Alpha)
	// Alpha is the size of each look; over a whole window of looks the
	// share is about three times it, and the sweep's report states 0.1%.
	if share > 0.0015 {
		t.Errorf("%.4f of levels within their SLO were cut short, want at most 0.0015", share)
	}
}

func TestEarlyBreakStopsALevelFarPastTheKneeQuickly(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tally := DefaultEarly.Start(testSLO, 16, false)
	next := level(rng, 0.2, 0.8)
	n := 0
	for tally.Add(next()) == Undecided {
		n++
		if n > 200 {
			t.Fatal("a level with a fifth of its requests slow did not stop early")
		}
	}
	if tally.Verdict() != Breaks || n > 40 {
		t.Errorf("verdict %v after %d requests, want Breaks within 40", tally.Verdict(), n)
	}
	if !strings.Contains(tally.Reason(), "exceeded the TTFT threshold of 1s") || !strings.Contains(tally.Reason(), "under the test's 0.0003") {
		t.Errorf("reason %q does not say what broke and with what confidence", tally.Reason())
	}
}

func TestEarlyBreakCountsFailures(t *testing.T) {
	tally := DefaultEarly.Start(testSLO, 16, false)
	for i := range 100 {
		s := Sample{TTFT: 100 * time.Millisecond, OutputTokens: 1}
		if i%10 == 0 {
			s = Sample{Failed: true}
		}
		if tally.Add(s) == Breaks {
			break
		}
	}
	if tally.Verdict() != Breaks || !strings.Contains(tally.Reason(), "failed") {
		t.Errorf("a level with 10%% failures: verdict %v, reason %q", tally.Verdict(), tally.Reason())
	}
}

func TestScreeningStopsOnlyALevelBelowTheSLO(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		name      string
		margin    float64
		mayScreen bool
		failOne   bool
		want      Verdict
	}{
		{"far below, allowed", 0.3, true, false, Screened},
		{"far below, not allowed (refinement or confirmation)", 0.3, false, false, Undecided},
		{"near the SLO", 0.97, true, false, Undecided},
		{"far below with a failure", 0.3, true, true, Undecided},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tally := DefaultEarly.Start(testSLO, 16, tc.mayScreen)
			next := level(rng, 0, tc.margin)
			for i := range DefaultEarly.ScreenRequests {
				s := next()
				if tc.failOne && i == 3 {
					s = Sample{Failed: true}
				}
				tally.Add(s)
			}
			if tally.Verdict() != tc.want {
				t.Errorf("verdict %v after %d requests, want %v (%s)", tally.Verdict(), DefaultEarly.ScreenRequests, tc.want, tally.Reason())
			}
			if tc.want == Screened && !strings.Contains(tally.Reason(), "rests on a higher level") {
				t.Errorf("reason %q does not say what the verdict rests on", tally.Reason())
			}
		})
	}
}

// The screening window is two completions per worker, from 10 to 30
// requests: a level at concurrency 1 is screened on 10 (fewer than the
// binomial test's 20, which must not hold the verdict back), and the first
// completions at concurrency 64 (the short requests finish first) are not
// taken for the level.
func TestTheScreeningWindowGrowsWithTheConcurrency(t *testing.T) {
	for _, tc := range []struct{ c, want int }{{1, 10}, {4, 10}, {8, 16}, {12, 24}, {16, 30}, {64, 30}} {
		if got := DefaultEarly.ScreenWindow(tc.c); got != tc.want {
			t.Errorf("ScreenWindow(%d) = %d, want %d", tc.c, got, tc.want)
		}
		rng := rand.New(rand.NewPCG(7, uint64(tc.c)))
		tally := DefaultEarly.Start(testSLO, tc.c, true)
		// Over the quick screen's margin, under the screen's.
		next := level(rng, 0, 0.7)
		n := 0
		for tally.Verdict() == Undecided && n < 200 {
			tally.Add(next())
			n++
		}
		if tally.Verdict() != Screened || n != tc.want {
			t.Errorf("concurrency %d: verdict %v after %d requests, want screened after %d (%s)", tc.c, tally.Verdict(), n, tc.want, tally.Reason())
		}
	}
	fixed := Early{ScreenRequests: 30, ScreenMargin: 0.5}
	if got := fixed.ScreenWindow(1); got != 30 {
		t.Errorf("without ScreenPerWorker the window is ScreenRequests at every concurrency: got %d at 1, want 30", got)
	}
}

// A level at concurrency 1, 2 or 4, where the window's floor of 10
// requests is more than two per worker, screens after two per worker (at least
// ScreenQuickRequests) when they sit well inside the SLO, and after its
// whole window when they are nearer it; a level whose window is two per
// worker already has no quicker screen.
func TestTheLowestLevelsScreenSoonerFarFromTheSLO(t *testing.T) {
	for _, tc := range []struct {
		c      int
		margin float64
		want   int
	}{
		{1, 0.3, 4}, {2, 0.3, 4}, {4, 0.3, 8}, {8, 0.3, 16}, {16, 0.3, 30},
		{1, 0.7, 10}, {2, 0.7, 10}, {4, 0.7, 10},
	} {
		rng := rand.New(rand.NewPCG(9, uint64(tc.c)))
		tally := DefaultEarly.Start(testSLO, tc.c, true)
		next := level(rng, 0, tc.margin)
		n := 0
		for tally.Verdict() == Undecided && n < 200 {
			tally.Add(next())
			n++
		}
		if tally.Verdict() != Screened || n != tc.want {
			t.Errorf("concurrency %d, latency at most %.1f of the SLO: verdict %v after %d requests, want screened after %d (%s)",
				tc.c, tc.margin, tally.Verdict(), n, tc.want, tally.Reason())
		}
	}
	// Refinement and confirmation levels never screen, quickly or not.
	tally := DefaultEarly.Start(testSLO, 1, false)
	next := level(rand.New(rand.NewPCG(9, 0)), 0, 0.3)
	for range 10 {
		tally.Add(next())
	}
	if tally.Verdict() != Undecided {
		t.Errorf("a level that may not screen: verdict %v after 10 requests (%s)", tally.Verdict(), tally.Reason())
	}
}

func TestEarlyRejectsBadSettings(t *testing.T) {
	for _, tc := range []struct {
		e    Early
		want string
	}{
		{Early{Alpha: 1}, "alpha must be in [0,1), got 1"},
		{Early{MinRequests: -1}, "min requests must be ≥ 0, got -1"},
		{Early{ScreenRequests: 50, ScreenMargin: 1.5}, "screen margin must be in (0,1), got 1.5"},
		{Early{ScreenRequests: 30, ScreenMargin: 0.5, ScreenPerWorker: -2}, "screen requests per worker must be ≥ 0, got -2"},
		{Early{ScreenRequests: 30, ScreenMargin: 0.5, ScreenPerWorker: 2}, "the fewest screening requests must be in [1, 30] (the screen requests), got 0"},
		{Early{ScreenRequests: 30, ScreenMargin: 0.5, ScreenPerWorker: 2, ScreenMinRequests: 40}, "got 40"},
		{Early{ScreenRequests: 30, ScreenMargin: 0.8, ScreenPerWorker: 2, ScreenMinRequests: 10, ScreenQuickRequests: -1}, "quick screen requests must be ≥ 0, got -1"},
		{Early{ScreenRequests: 30, ScreenMargin: 0.8, ScreenPerWorker: 2, ScreenMinRequests: 10, ScreenQuickRequests: 4}, "the quick screen margin must be in (0, 0.8] (the screen margin), got 0"},
		{Early{ScreenRequests: 30, ScreenMargin: 0.8, ScreenPerWorker: 2, ScreenMinRequests: 10, ScreenQuickRequests: 4, ScreenQuickMargin: 0.9}, "got 0.9"},
	} {
		if err := tc.e.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.e, err, tc.want)
		}
	}
}

func TestSummarizeCountsGoodputErrorsAndTheVerdictByOneRule(t *testing.T) {
	ms := time.Millisecond
	samples := []Sample{
		{TTFT: 100 * ms, TPOT: 10 * ms, HasTPOT: true, OutputTokens: 100},
		{TTFT: 1500 * ms, TPOT: 10 * ms, HasTPOT: true, OutputTokens: 100}, // slow TTFT: not good
		{TTFT: 100 * ms, OutputTokens: 1},                                  // single token: judged on TTFT
		{Failed: true},
	}
	s := Summarize(samples, 2*time.Second, -1, testSLO)
	if s.Point.Requests != 3 || s.Errors != 1 || s.Point.ErrorRate != 0.25 {
		t.Errorf("requests %d errors %d rate %g", s.Point.Requests, s.Errors, s.Point.ErrorRate)
	}
	if s.Point.OutputTokensPerSecond != 100.5 || s.Point.GoodputTokensPerSecond != 50.5 {
		t.Errorf("throughput %g goodput %g, want 100.5 and 50.5", s.Point.OutputTokensPerSecond, s.Point.GoodputTokensPerSecond)
	}
	if s.Point.MeetsSLO {
		t.Error("a level with 25% errors and a slow p99 meets the SLO")
	}
	// With the engine's own token rate, goodput keeps the good share.
	if e := Summarize(samples, 2*time.Second, 300, testSLO); e.Point.GoodputTokensPerSecond != 300*101.0/201 {
		t.Errorf("goodput with the engine's rate: %g", e.Point.GoodputTokensPerSecond)
	}
	if z := Summarize(nil, time.Second, -1, testSLO); !math.IsInf(z.Margin, 1) || z.Point.MeetsSLO {
		t.Errorf("an empty window: margin %g meets %v", z.Margin, z.Point.MeetsSLO)
	}
}
