package sweep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
)

// closedOutcome is an outcome whose closed-loop search found a knee at 8
// (10 requests/s) on the points 1, 2, 4, 8, 16.
func closedOutcome() *Outcome {
	slo := knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(50 * time.Millisecond), Quantile: 0.99}
	var pts []knee.Point
	for _, c := range []float64{1, 2, 4, 8, 16} {
		pts = append(pts, knee.Point{Concurrency: c, Requests: 200, RequestsPerSecond: 1.25 * c, OutputTokensPerSecond: 100 * c,
			GoodputTokensPerSecond: 100 * c, KVCacheUsage: c / 20, MeetsSLO: c <= 8,
			TTFT: knee.Quantiles{P50: 0.1, P99: 0.2}, TPOT: knee.Quantiles{P50: 0.01, P99: 0.02}})
	}
	prof := &knee.Profile{
		APIVersion: knee.APIVersion, Kind: knee.Kind, Metadata: knee.Metadata{Name: "fake"},
		Match: knee.Match{Model: "m"}, SLO: slo, Points: pts,
		Sweep: knee.SweepInfo{Tool: "kneewatch sweep", Levels: []int{1, 2, 4, 8, 16}},
		Knee:  knee.Knee{Concurrency: 8, OutputTokensPerSecond: 800, GoodputTokensPerSecond: 800, KVCacheUsage: 0.4, LimitingResource: knee.ResourceCompute},
	}
	return &Outcome{Profile: prof}
}

// fakeTrials keeps the SLO up to a rate; its mean in-flight is half the
// rate (requests/s), its throughput 50 tokens per request.
func fakeTrials(keepsUpTo float64, calls *[]float64) trialFunc {
	return func(_ context.Context, _, _ int, rate float64) (Trial, error) {
		*calls = append(*calls, rate)
		kept := rate <= keepsUpTo
		tr := Trial{Rate: rate, Kept: kept, InFlight: rate / 2,
			Point: knee.Point{Concurrency: rate / 2, OutputTokensPerSecond: 50 * rate, GoodputTokensPerSecond: 50 * rate, MeetsSLO: kept}}
		if !kept {
			tr.Breach = "p99 TTFT 2s > 1s at 10s into the steady part"
		}
		return tr, nil
	}
}

func testConfig() *Config {
	cfg := &Config{Logger: slog.New(slog.DiscardHandler), Progress: noProgress{}, Clock: time.Now}
	_ = cfg.OpenLoop.defaults()
	return cfg
}

func TestThePoissonKneeIsTheBestKeptTrialOnTheClosedLoopCurve(t *testing.T) {
	out := closedOutcome()
	out.StartRate = 10
	var calls []float64
	best, err := testConfig().searchRate(context.Background(), out, fakeTrials(7, &calls))
	if err != nil {
		t.Fatal(err)
	}
	// The start rate first, then four halvings of [2, 10]; the low
	// rate is never needed.
	if diff := cmp.Diff([]float64{10, 6, 8, 7, 7.5}, calls); diff != "" {
		t.Errorf("rates tried (-want +got):\n%s", diff)
	}
	tr := out.Trials[best]
	if tr.Rate != 7 || tr.Fraction != 0.7 {
		t.Errorf("best trial %g req/s (%g×), want 7 (0.7×)", tr.Rate, tr.Fraction)
	}
	k, err := poissonKnee(out.Profile, tr, 11)
	if err != nil {
		t.Fatal(err)
	}
	// In flight 3.5 lies between the points at 2 and 4: KV read on the
	// curve there, 3.5 ÷ 20.
	want := knee.Knee{Concurrency: 3.5, OutputTokensPerSecond: 350, GoodputTokensPerSecond: 350, KVCacheUsage: 0.175,
		LimitingResource: knee.ResourceCompute, Arrivals: knee.ArrivalsPoisson, RequestsPerSecond: 7, ClosedLoopConcurrency: 11}
	if diff := cmp.Diff(want, k); diff != "" {
		t.Errorf("poisson knee (-want +got):\n%s", diff)
	}
	out.Profile.Knee = k
	if err := out.Profile.Validate(); err != nil {
		t.Errorf("the poisson profile does not validate: %v", err)
	}
}

func TestAPoissonSearchBreakingAtTheLowRateSaysSo(t *testing.T) {
	out := closedOutcome()
	out.StartRate = 10
	var calls []float64
	best, err := testConfig().searchRate(context.Background(), out, fakeTrials(1, &calls))
	if !errors.Is(err, ErrPoissonUnreachable) || best != -1 {
		t.Fatalf("best %d, error %v; want ErrPoissonUnreachable", best, err)
	}
	for _, want := range []string{"2 requests/s (0.2× the start rate, 10)", "p99 TTFT 2s > 1s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// The halvings all break, so the low rate is tried last, and breaks.
	if diff := cmp.Diff([]float64{10, 6, 4, 3, 2.5, 2}, calls); diff != "" {
		t.Errorf("rates tried (-want +got):\n%s", diff)
	}
}

func TestAPoissonKneeBelowTheLowestLevelSweptIsAnError(t *testing.T) {
	out := closedOutcome()
	tr := Trial{Rate: 1, Kept: true, Point: knee.Point{Concurrency: 0.4, OutputTokensPerSecond: 50}}
	_, err := poissonKnee(out.Profile, tr, 11)
	if err == nil || !strings.Contains(err.Error(), "mean in-flight load (0.4 at 1 requests/s) lies outside the concurrencies swept (1..16)") {
		t.Errorf("error %v", err)
	}
}

func TestAnInterruptedPoissonSearchKeepsTheBestRateSoFarMarkedPartial(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cancelAt    int // the trial during which the sweep is interrupted
		wantKnee    float64
		wantArrival knee.Arrivals
		wantRates   []float64
	}{
		{"after a kept trial, the knee is the best kept rate's", 3, 3, knee.ArrivalsPoisson, []float64{10, 6}},
		{"during the first trial, the knee stays the closed-loop one", 1, 8, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := closedOutcome()
			closed := out.Profile.Knee
			out.ClosedLoopKnee, out.StartConcurrency, out.StartRate, out.ClosedLoopEstimate = &closed, 16, 10, 11
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := testConfig()
			finished := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
			cfg.Clock = func() time.Time { return finished }
			kept := fakeTrials(7, new([]float64))
			n := 0
			trial := func(ctx context.Context, i, s int, rate float64) (Trial, error) {
				if n++; n == tc.cancelAt {
					cancel()
					return Trial{}, ctx.Err()
				}
				return kept(ctx, i, s, rate)
			}
			if err := cfg.poissonProfile(ctx, out, trial); err != nil {
				t.Fatal(err)
			}
			p := out.Profile
			if p == nil || !out.Interrupted || !p.Metadata.Partial || !strings.Contains(out.OpenLoopReason, "interrupted during the trial at") {
				t.Fatalf("profile %v, interrupted %v, reason %q: want a partial profile", p != nil, out.Interrupted, out.OpenLoopReason)
			}
			if p.Knee.Concurrency != tc.wantKnee || p.Knee.Arrivals != tc.wantArrival || !p.Sweep.FinishedAt.Equal(finished) {
				t.Errorf("knee %+v finished %s", p.Knee, p.Sweep.FinishedAt)
			}
			if diff := cmp.Diff(tc.wantRates, p.Sweep.RateLevels); diff != "" {
				t.Errorf("rate levels (-want +got):\n%s", diff)
			}
			if err := p.Validate(); err != nil {
				t.Errorf("the partial profile does not validate: %v", err)
			}
		})
	}
}

func TestAPoissonSearchWithNoKeptRateWritesNoProfile(t *testing.T) {
	out := closedOutcome()
	closed := out.Profile.Knee
	out.ClosedLoopKnee, out.StartConcurrency, out.StartRate, out.ClosedLoopEstimate = &closed, 16, 10, 11
	err := testConfig().poissonProfile(context.Background(), out, fakeTrials(0.5, new([]float64)))
	if !errors.Is(err, ErrPoissonUnreachable) || out.Profile != nil {
		t.Errorf("error %v, profile %v: want ErrPoissonUnreachable and no profile", err, out.Profile != nil)
	}
}

// TestAConfirmedLevelIsOnePointInTheProfile: a screened level measured
// again in full (the knee rested on it) appears once among the points, as
// its full measurement, and twice in the run order.
func TestAConfirmedLevelIsOnePointInTheProfile(t *testing.T) {
	cfg := testConfig()
	cfg.Workload, cfg.Client = resolveChat(), &Client{Model: "m", BaseURL: "http://127.0.0.1:1/v1"}
	cfg.SLO = knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(time.Second), Quantile: 0.99}
	pt := func(c float64, meets bool, requests int) knee.Point {
		return knee.Point{Concurrency: c, Requests: requests, RequestsPerSecond: c, OutputTokensPerSecond: 100 * c, GoodputTokensPerSecond: 100 * c, MeetsSLO: meets}
	}
	out := &Outcome{Levels: []Level{
		{Point: pt(1, true, 30)}, {Point: pt(2, true, 30)}, {Point: pt(4, false, 20)}, {Point: pt(3, false, 25)},
		{Point: pt(2, true, 200)}, // the confirmation of the screened 2
	}}
	p, err := cfg.profile(out, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Points) != 4 || p.Points[1].Concurrency != 2 || p.Points[1].Requests != 200 {
		t.Errorf("points %+v: want 1, 2 (its full 200-request measurement), 3, 4", p.Points)
	}
	if diff := cmp.Diff([]int{1, 2, 4, 3, 2}, p.Sweep.Levels); diff != "" {
		t.Errorf("run order (-want +got):\n%s", diff)
	}
	if p.Knee.Concurrency != 2 {
		t.Errorf("knee %g, want 2", p.Knee.Concurrency)
	}
}

// The profile records the lengths as served, the failed requests left out:
// their means and their coefficients of variation (how noisy a live
// window's mean is when the mix has not moved; see knee.WorkloadInfo).
func TestTheProfileRecordsTheServedLengthsSpread(t *testing.T) {
	cfg := testConfig()
	cfg.Workload, cfg.Client = resolveChat(), &Client{Model: "m", BaseURL: "http://127.0.0.1:1/v1"}
	cfg.SLO = knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(time.Second), Quantile: 0.99}
	results := []Result{
		{PromptTokens: 100, OutputTokens: 10}, {PromptTokens: 300, OutputTokens: 30},
		{PromptTokens: 100, OutputTokens: 10}, {PromptTokens: 300, OutputTokens: 30},
		{PromptTokens: 9000, OutputTokens: 900, Err: errors.New("reset")}, // not served
	}
	out := &Outcome{Levels: []Level{{Point: knee.Point{Concurrency: 1, Requests: 4, RequestsPerSecond: 1,
		OutputTokensPerSecond: 20, GoodputTokensPerSecond: 20, MeetsSLO: true}, Results: results}}}
	p, err := cfg.profile(out, false)
	if err != nil {
		t.Fatal(err)
	}
	// Lengths 100 and 300 in equal parts: mean 200, standard deviation 100.
	w := p.Workload
	if w.MeanPromptTokens != 200 || w.MeanOutputTokens != 20 || w.PromptTokensCV != 0.5 || w.OutputTokensCV != 0.5 {
		t.Errorf("means %g / %g, CVs %g / %g: want 200 / 20 and 0.5 / 0.5",
			w.MeanPromptTokens, w.MeanOutputTokens, w.PromptTokensCV, w.OutputTokensCV)
	}
}

// A trial's rate is rounded down to 4 significant digits: never above the
// fraction of the closed-loop rate asked for, so a trial at 1× cannot make
// the Poisson knee faster than the closed-loop knee it was searched under.
func TestTrialRatesRoundDown(t *testing.T) {
	for _, tc := range []struct{ x, want float64 }{
		{61.866, 61.86},
		{61.864, 61.86},
		{62.69, 62.69},
		{9.9996, 9.999},
		{0.012345, 0.01234},
		{1234.56, 1234},
	} {
		if got := roundSignificantDown(tc.x, 4); got != tc.want {
			t.Errorf("roundSignificantDown(%g, 4) = %g, want %g", tc.x, got, tc.want)
		}
	}
}

// TestTheTrialsStartFromTheBrokenLevelUnlessItsThroughputCollapsed: past
// a KV-bound knee the closed loop's throughput collapses (the simulator's
// 70B/H200 long-context replica: 0.281 requests/s kept at 26, 0.059 broken
// at 32), so the broken level's rate is no bound on the poisson knee's;
// elsewhere the broken level's rate is the start, a little under the kept
// one's or over it.
func TestTheTrialsStartFromTheBrokenLevelUnlessItsThroughputCollapsed(t *testing.T) {
	// A search that keeps the SLO up to goodUpTo: the doubling breaks at
	// 32, and its probe inside [16, 32) is 24.
	search := func(goodUpTo int) *measure.Search {
		s, err := measure.NewSearch(256, 0.1, 0)
		if err != nil {
			t.Fatal(err)
		}
		s.StopAtBreak, s.BreakProbes = true, 1
		for {
			step, ok := s.Next()
			if !ok {
				return s
			}
			good, m := step.Concurrency <= goodUpTo, 0.5
			if !good {
				m = 2
			}
			s.Record(step.Concurrency, measure.Outcome{Good: good, Margin: m, TokensPerSecond: float64(step.Concurrency)})
		}
	}
	cliff := []knee.Point{{Concurrency: 1, RequestsPerSecond: 0.041}, {Concurrency: 16, RequestsPerSecond: 0.247},
		{Concurrency: 24, RequestsPerSecond: 0.281}, {Concurrency: 32, RequestsPerSecond: 0.059}}
	s := search(24)
	if lo, hi := s.Bracket(); lo != 24 || hi != 32 {
		t.Fatalf("bracket [%d, %d), want [24, 32)", lo, hi)
	}
	if got, ok := OpenLoopStart(cliff, s); !ok || got.Concurrency != 24 {
		t.Errorf("start %+v, want the kept level at 24", got)
	}
	grows := []knee.Point{{Concurrency: 16, RequestsPerSecond: 2.5}, {Concurrency: 24, RequestsPerSecond: 3.1}, {Concurrency: 32, RequestsPerSecond: 3.3}}
	if got, ok := OpenLoopStart(grows, search(16)); !ok || got.Concurrency != 24 {
		t.Errorf("start %+v, want the lowest broken level, 24 (not the doubling's 32)", got)
	}
	// 0.73 of the kept level's rate, as 8B/L4 chat (loose) measured: a
	// broken level read low, not a collapse.
	dips := []knee.Point{{Concurrency: 16, RequestsPerSecond: 5.683}, {Concurrency: 24, RequestsPerSecond: 4.16}, {Concurrency: 32, RequestsPerSecond: 4.1}}
	if got, ok := OpenLoopStart(dips, search(16)); !ok || got.Concurrency != 24 {
		t.Errorf("start %+v, want the lowest broken level, 24", got)
	}
	if _, ok := OpenLoopStart([]knee.Point{{Concurrency: 1}}, search(0)); ok {
		t.Error("a curve without rates gave a start")
	}
}

// searchTrials keeps the SLO up to keepsUpTo[search-1] in each search, as
// draws that judge the same rates differently; it records each call's
// search.
func searchTrials(keepsUpTo []float64, searches *[]int) trialFunc {
	return func(ctx context.Context, i, s int, rate float64) (Trial, error) {
		*searches = append(*searches, s)
		return fakeTrials(keepsUpTo[s-1], new([]float64))(ctx, i, s, rate)
	}
}

func TestRepeatedSearchesKeepTheMedianSearchsKnee(t *testing.T) {
	for _, tc := range []struct {
		name      string
		keepsUpTo []float64
		wantRate  float64
		wantBests []float64 // each search's best kept rate, 0 for none
	}{
		{"three searches: the middle rate", []float64{9, 6.2, 7.2}, 7, []float64{9, 6, 7}},
		{"two searches: the lower", []float64{9, 7.2}, 7, []float64{9, 7}},
		{"a search that kept nothing counts lowest and is outvoted", []float64{1, 8.2, 7.2}, 7, []float64{0, 8, 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := closedOutcome()
			out.StartRate = 10
			cfg := testConfig()
			cfg.OpenLoop.Searches = len(tc.keepsUpTo)
			var searches []int
			best, err := cfg.searchRate(context.Background(), out, searchTrials(tc.keepsUpTo, &searches))
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Trials[best].Rate; got != tc.wantRate {
				t.Errorf("knee at %g requests/s, want %g", got, tc.wantRate)
			}
			var bests []float64
			for _, i := range out.SearchBests {
				r := 0.0
				if i >= 0 {
					r = out.Trials[i].Rate
				}
				bests = append(bests, r)
			}
			if diff := cmp.Diff(tc.wantBests, bests); diff != "" {
				t.Errorf("each search's best (-want +got):\n%s", diff)
			}
			// The searches run one after another, each trial marked with its own.
			for i, tr := range out.Trials {
				if tr.Search != searches[i] || (i > 0 && tr.Search < out.Trials[i-1].Search) {
					t.Fatalf("trial %d marked search %d, run in search %d", i+1, tr.Search, searches[i])
				}
			}
			if !strings.Contains(out.OpenLoopReason, fmt.Sprintf("%d rate searches", len(tc.keepsUpTo))) {
				t.Errorf("reason %q does not say how many searches ran", out.OpenLoopReason)
			}
		})
	}
}

func TestRepeatedSearchesThatMostlyKeptNothingHaveNoKnee(t *testing.T) {
	out := closedOutcome()
	out.StartRate = 10
	cfg := testConfig()
	cfg.OpenLoop.Searches = 3
	best, err := cfg.searchRate(context.Background(), out, searchTrials([]float64{1, 8.2, 1}, new([]int)))
	if !errors.Is(err, ErrPoissonUnreachable) || best != -1 || !strings.Contains(err.Error(), "the median of 3 searches kept none") {
		t.Errorf("best %d, error %v; want ErrPoissonUnreachable naming the searches", best, err)
	}
}

func TestAnInterruptedRepeatKeepsTheSearchesItFinished(t *testing.T) {
	out := closedOutcome()
	out.StartRate = 10
	cfg := testConfig()
	cfg.OpenLoop.Searches = 3
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inner := searchTrials([]float64{9, 6.2, 7.2}, new([]int))
	trial := func(ctx context.Context, i, s int, rate float64) (Trial, error) {
		if s == 3 {
			cancel()
			return Trial{}, ctx.Err()
		}
		return inner(ctx, i, s, rate)
	}
	best, err := cfg.searchRate(ctx, out, trial)
	if !errors.Is(err, context.Canceled) || !out.Interrupted {
		t.Fatalf("error %v, interrupted %v", err, out.Interrupted)
	}
	// Two searches finished (9 and 6): the lower middle one.
	if best < 0 || out.Trials[best].Rate != 6 {
		t.Errorf("knee: trial %d, want the trial at 6 requests/s", best)
	}
}

func TestTheSearchesAreBounded(t *testing.T) {
	for _, n := range []int{-1, MaxSearches + 1} {
		o := OpenLoopConfig{Searches: n}
		if err := o.defaults(); err == nil || !strings.Contains(err.Error(), "searches must be 1 to") {
			t.Errorf("searches %d: error %v", n, err)
		}
	}
	o := OpenLoopConfig{}
	if err := o.defaults(); err != nil || o.Searches != 1 {
		t.Errorf("no searches given: %d, error %v; want 1", o.Searches, err)
	}
}
