package measure

import (
	"fmt"
	"math"
	"strings"

	"github.com/kneewatch/kneewatch/knee"
)

// Early says when a level may stop before its window fills. Two rules, each
// with what it costs stated:
//
//   - Breaking early is a one-sided binomial test. Were the level within
//     its SLO, at most a share 1 − q of its requests would exceed a
//     threshold (q the SLO quantile), and at most MaxErrorRate would fail.
//     A level stops as breaking when the count it has seen would then have
//     probability below Alpha. Alpha is the size of one look; over a whole
//     200-request window looked at after every request, a level exactly at
//     its SLO's edge is cut short about three times as often (0.09% with
//     DefaultEarly, measured by TestEarlyBreakRarelyCutsALevelWithinItsSLO),
//     and a level clearly within it far less.
//   - Screening stops a level of the doubling phase as provisionally good
//     after its screening window (ScreenWindow) of requests whose SLO
//     quantile is within ScreenMargin of the thresholds, with none failed.
//     No test at that size can confirm a p99, so the verdict is
//     provisional: it rests on monotonicity (latency does not fall as
//     concurrency rises) and a higher level meeting the SLO in full, and the
//     search measures a screened level in full before a knee may rest on it
//     (see Search).
//
// The zero Early stops nothing early.
type Early struct {
	// Alpha is the test's size; 0 turns breaking early off.
	Alpha float64
	// MinRequests is the fewest requests any early verdict is drawn from
	// (0 means 20).
	MinRequests int
	// ScreenRequests and ScreenMargin make the screening rule; 0 requests
	// turns it off. ScreenRequests is the screening window's size, or with
	// ScreenPerWorker its largest.
	ScreenRequests int
	ScreenMargin   float64
	// ScreenPerWorker sizes the window by the concurrency instead: that
	// many completions per worker, at least ScreenMinRequests and at most
	// ScreenRequests (0: ScreenRequests at every concurrency). The window
	// is there to give a curve point and catch a gross miss, not to prove
	// the SLO (monotonicity does that), and a fixed 30 requests made the
	// lowest levels the sweep's slowest: 30 requests of 8.7 s, one at a
	// time, are 4.4 min at concurrency 1, against 1 min at 16.
	ScreenPerWorker   int
	ScreenMinRequests int
	// ScreenQuickRequests and ScreenQuickMargin let a level whose screening
	// window ScreenMinRequests pads past ScreenPerWorker requests a worker
	// screen sooner: after that many per worker, at least
	// ScreenQuickRequests, when their SLO quantile is within
	// ScreenQuickMargin of the thresholds (0 requests: never). Those are
	// a doubling's lowest levels, the dearest per request (one or two in
	// flight) and the furthest from the knee.
	ScreenQuickRequests int
	ScreenQuickMargin   float64
}

// quickScreenWindow is how many requests may screen a level at
// concurrency c within ScreenQuickMargin: two per worker, at least
// ScreenQuickRequests; 0 when that is no sooner than ScreenWindow.
func (e Early) quickScreenWindow(c int) int {
	if e.ScreenPerWorker <= 0 || e.ScreenQuickRequests <= 0 {
		return 0
	}
	if q := max(e.ScreenPerWorker*c, e.ScreenQuickRequests); q < e.ScreenWindow(c) {
		return q
	}
	return 0
}

// ScreenWindow is how many requests screen a level at concurrency c.
func (e Early) ScreenWindow(c int) int {
	if e.ScreenPerWorker <= 0 {
		return e.ScreenRequests
	}
	return min(e.ScreenRequests, max(e.ScreenPerWorker*c, e.ScreenMinRequests))
}

// DefaultEarly is what `kneewatch sweep` uses: about 1 in 1,000 levels at
// their SLO's very edge is cut short as breaking, and a doubling level below
// the knee is screened when the SLO quantile of two requests per worker
// (10 to 30 of them; about their slowest) is within 0.8 of the thresholds.
//
// The screening settings were chosen on half A of `make bench-sweep`'s
// deployments (30 requests within 0.5, as before, against per-worker
// windows and margins 0.5–0.9) and then run on half B: the closed-loop
// searches' time fell 22% on A and 20% on B, the knees within ±10% of the
// truth went 11 → 12 of 14 on A and stayed 12 of 14 on B.
//
// A level at concurrency 1, 2 or 4 screens sooner, after two requests per
// worker and at least 4 (ScreenQuickRequests) within 0.5 of the
// thresholds: at concurrency 1 its ten requests of 8.7 s (70B/H200 code)
// took 2 minutes of a Poisson sweep's 21. Over make bench-sweep's 28
// deployments (2026-12-06) it shortened every doubling by 7 s to 4 min
// (8B/L4 chat tight 9m2s → 7m48s, 70B/H200 code tight 11m43s → 10m35s) and
// changed no knee, closed-loop or poisson, on either half. Applied at
// every level (4 requests within 0.5, or 0.6) it moved the poisson knees
// of the slow deployments, whose kept level before the break it screened
// on four requests (the probe after the break is placed by that level's
// margin): half A's bias +2% → +11%, half B within ±10% 11 → 8 of 14.
var DefaultEarly = Early{Alpha: 0.0003, MinRequests: 20, ScreenRequests: 30, ScreenMargin: 0.8, ScreenPerWorker: 2, ScreenMinRequests: 10,
	ScreenQuickRequests: 4, ScreenQuickMargin: 0.5}

// Validate names the first bad setting.
func (e Early) Validate() error {
	switch {
	case !(e.Alpha >= 0 && e.Alpha < 1):
		return fmt.Errorf("early stopping: alpha must be in [0,1), got %v", e.Alpha)
	case e.MinRequests < 0:
		return fmt.Errorf("early stopping: min requests must be ≥ 0, got %d", e.MinRequests)
	case e.ScreenRequests < 0:
		return fmt.Errorf("early stopping: screen requests must be ≥ 0, got %d", e.ScreenRequests)
	case e.ScreenRequests > 0 && !(e.ScreenMargin > 0 && e.ScreenMargin < 1):
		return fmt.Errorf("early stopping: screen margin must be in (0,1), got %v", e.ScreenMargin)
	case e.ScreenPerWorker < 0:
		return fmt.Errorf("early stopping: screen requests per worker must be ≥ 0, got %d", e.ScreenPerWorker)
	case e.ScreenPerWorker > 0 && !(e.ScreenMinRequests >= 1 && e.ScreenMinRequests <= e.ScreenRequests):
		return fmt.Errorf("early stopping: the fewest screening requests must be in [1, %d] (the screen requests), got %d", e.ScreenRequests, e.ScreenMinRequests)
	case e.ScreenQuickRequests < 0:
		return fmt.Errorf("early stopping: quick screen requests must be ≥ 0, got %d", e.ScreenQuickRequests)
	case e.ScreenQuickRequests > 0 && !(e.ScreenQuickMargin > 0 && e.ScreenQuickMargin <= e.ScreenMargin):
		return fmt.Errorf("early stopping: the quick screen margin must be in (0, %g] (the screen margin), got %v", e.ScreenMargin, e.ScreenQuickMargin)
	}
	return nil
}

// Verdict is what a Tally decided so far.
type Verdict int

const (
	// Undecided: keep measuring until the window fills.
	Undecided Verdict = iota
	// Breaks: the level is past the knee, with the test's confidence.
	Breaks
	// Screened: the level is provisionally within its SLO.
	Screened
)

// Tally counts a level's window as it fills and applies Early's rules.
type Tally struct {
	early Early
	slo   knee.SLO

	screen                     int      // the screening window, 0 when the level may not screen
	quick                      int      // the quick screening window, 0 when there is none
	samples                    []Sample // the first screen requests, for screening
	n, failed                  int
	ttftN, ttftSlow            int
	tpotN, tpotSlow            int
	verdict                    Verdict
	reason                     string
	lastTTFT, lastTPOT, lastEr int // counts at the last test, so it runs only when one grows
}

// Start begins the tally of a level at concurrency c; mayScreen is the
// search's Step.MayScreen.
func (e Early) Start(slo knee.SLO, c int, mayScreen bool) *Tally {
	if e.MinRequests == 0 {
		e.MinRequests = 20
	}
	t := &Tally{early: e, slo: slo}
	if mayScreen && e.ScreenRequests > 0 {
		t.screen, t.quick = e.ScreenWindow(c), e.quickScreenWindow(c)
	}
	return t
}

// Add counts one window request and returns the verdict so far; once it is
// not Undecided it stays.
func (t *Tally) Add(s Sample) Verdict {
	if t.verdict != Undecided {
		return t.verdict
	}
	t.n++
	switch {
	case s.Failed:
		t.failed++
	default:
		t.ttftN++
		if s.TTFT > t.slo.TTFT.D() {
			t.ttftSlow++
		}
		if s.HasTPOT {
			t.tpotN++
			if s.TPOT > t.slo.TPOT.D() {
				t.tpotSlow++
			}
		}
	}
	if len(t.samples) < t.screen {
		t.samples = append(t.samples, s)
	}
	if t.n >= t.early.MinRequests && t.breaks() {
		return t.verdict
	}
	if t.screen > 0 && t.failed == 0 {
		switch t.n {
		case t.screen:
			t.screens(t.early.ScreenMargin)
		case t.quick:
			t.screens(t.early.ScreenQuickMargin)
		}
	}
	return t.verdict
}

// screens records a Screened verdict when the requests screened so far
// have their SLO quantile within margin of the thresholds.
func (t *Tally) screens(margin float64) {
	if m := Summarize(t.samples, 0, 0, t.slo).Margin; m <= margin {
		t.verdict = Screened
		t.reason = fmt.Sprintf("screened after %d requests: their %s latency is at most %.2f of the SLO (under %.2f); the good verdict rests on a higher level meeting the SLO in full",
			t.n, QuantileLabel(t.slo.Quantile), m, margin)
	}
}

// breaks runs the binomial test when a count it reads has grown, and
// records a Breaks verdict if the level fails it.
func (t *Tally) breaks() bool {
	if t.early.Alpha > 0 && (t.ttftSlow > t.lastTTFT || t.tpotSlow > t.lastTPOT || t.failed > t.lastEr || t.n == t.early.MinRequests) {
		t.lastTTFT, t.lastTPOT, t.lastEr = t.ttftSlow, t.tpotSlow, t.failed
		allowed := 1 - t.slo.Quantile
		for _, c := range []struct {
			what       string
			slow, of   int
			share      float64
			thresholds string
		}{
			{"exceeded the TTFT threshold", t.ttftSlow, t.ttftN, allowed, t.slo.TTFT.String()},
			{"exceeded the TPOT threshold", t.tpotSlow, t.tpotN, allowed, t.slo.TPOT.String()},
			{"failed", t.failed, t.n, MaxErrorRate, ""},
		} {
			if c.slow == 0 {
				continue
			}
			if p := BinomialTail(c.of, c.slow, c.share); p < t.early.Alpha {
				what := c.what
				if c.thresholds != "" {
					what += " of " + c.thresholds
				}
				t.verdict = Breaks
				t.reason = fmt.Sprintf("stopped early after %d requests: %d of %d %s; were the level within its SLO (at most %.3g%% of them), that many would be seen with probability %.2g, under the test's %g",
					t.n, c.slow, c.of, what, 100*c.share, p, t.early.Alpha)
				return true
			}
		}
	}
	return false
}

// Verdict is the verdict so far.
func (t *Tally) Verdict() Verdict { return t.verdict }

// Reason says why the level stopped early ("" while Undecided).
func (t *Tally) Reason() string { return t.reason }

// BinomialTail is P(X ≥ k) for X ~ Binomial(n, p).
func BinomialTail(n, k int, p float64) float64 {
	switch {
	case k <= 0:
		return 1
	case k > n:
		return 0
	case p <= 0:
		return 0
	case p >= 1:
		return 1
	}
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	logTerm := lg(n) - lg(k) - lg(n-k) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p)
	term := math.Exp(logTerm)
	sum := term
	for i := k; i < n; i++ {
		term *= float64(n-i) / float64(i+1) * p / (1 - p)
		sum += term
		if term < sum*1e-16 {
			break
		}
	}
	return min(sum, 1)
}

// QuantileLabel writes 0.99 as "p99" and 0.999 as "p99.9", as the sweep's
// logs and reports name an SLO quantile.
func QuantileLabel(q float64) string {
	return "p" + strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", q*100), "0"), ".")
}
