package sim

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
)

// poissonChatSLO is the chat SLO of the poisson ground-truth tests (and of
// docs/simulator.md's example): tight enough on TPOT that the 8B/H100
// closed-loop knee lies well inside the sweep.
var poissonChatSLO = knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(25 * time.Millisecond), Quantile: 0.99}

// shortOpenLoop keeps a poisson search cheap where the test is not about
// the figures of a full-length run.
var shortOpenLoop = OpenLoopConfig{Warmup: time.Minute, Steady: 3 * time.Minute, Steps: 2}

func poissonKnee(t *testing.T, cfg KneeConfig) knee.Profile {
	t.Helper()
	cfg.Arrivals = knee.ArrivalsPoisson
	prof, err := FindKnee(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := prof.Validate(); err != nil {
		t.Fatalf("the poisson profile does not validate:\n%v", err)
	}
	return prof
}

// trialAt reruns the search's trial at rate, as FindKnee ran it.
func trialAt(t *testing.T, cfg KneeConfig, rate float64) OpenLoopLevel {
	t.Helper()
	lv, err := RunOpenLoop(context.Background(), OpenLoopLevelConfig{
		Engine: cfg.Engine, Workload: cfg.Workload, Rate: rate, SLO: cfg.SLO, Seed: cfg.Seed, OpenLoop: cfg.OpenLoop, Verdict: cfg.OpenLoopVerdict,
	})
	if err != nil {
		t.Fatal(err)
	}
	return lv
}

func TestFindKneePoissonLiesBelowTheClosedLoopKneeAndKeepsTheSLOOnlyUpToIt(t *testing.T) {
	if testing.Short() {
		t.Skip("a closed-loop search and eight 25-minute poisson trials (about seven seconds)")
	}
	cfg := kneeConfig(t, "llama-3.1-8b-h100", "chat", poissonChatSLO, 1, 256)
	closed, err := FindKnee(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	prof := poissonKnee(t, cfg)
	k := prof.Knee
	closedRate := pointAt(t, closed, closed.Knee.Concurrency).RequestsPerSecond
	t.Logf("closed-loop knee c=%g at %.3f req/s; poisson knee %.3f in flight at %.3f req/s (%.3f×), %.0f tok/s, goodput %.0f; rates %v",
		closed.Knee.Concurrency, closedRate, k.Concurrency, k.RequestsPerSecond, k.RequestsPerSecond/closedRate,
		k.OutputTokensPerSecond, k.GoodputTokensPerSecond, prof.Sweep.RateLevels)

	// The curve kneewatch reads throughput on stays the closed-loop one.
	if diff := cmp.Diff(closed.Points, prof.Points); diff != "" {
		t.Errorf("points differ from the closed-loop search's (-closed +poisson):\n%s", diff)
	}
	if diff := cmp.Diff(closed.Sweep.Levels, prof.Sweep.Levels); diff != "" {
		t.Errorf("levels differ from the closed-loop search's (-closed +poisson):\n%s", diff)
	}
	if k.Arrivals != knee.ArrivalsPoisson || k.ClosedLoopConcurrency != closed.Knee.Concurrency {
		t.Errorf("knee says arrivals %q, closed-loop knee %g; want poisson, %g", k.Arrivals, k.ClosedLoopConcurrency, closed.Knee.Concurrency)
	}
	// Poisson bunching costs load: fewer requests in flight and a lower rate.
	if !(k.Concurrency < closed.Knee.Concurrency) || !(k.RequestsPerSecond < closedRate) {
		t.Errorf("poisson knee %g in flight at %g req/s is not below the closed-loop knee %g at %g req/s",
			k.Concurrency, k.RequestsPerSecond, closed.Knee.Concurrency, closedRate)
	}
	// The search tries 1× the closed-loop rate, then halves [0.2×, 1×] six
	// times; the low end is never needed here.
	rates := prof.Sweep.RateLevels
	if len(rates) != 7 || rates[0] != closedRate || rates[1] != math.Round(0.6*closedRate*1e6)/1e6 || !slices.Contains(rates, k.RequestsPerSecond) {
		t.Errorf("rate levels %v: want 7, starting %g and %g, holding the knee's %g", rates, closedRate, 0.6*closedRate, k.RequestsPerSecond)
	}

	// The knee's rate keeps the SLO in every window and the trial reproduces
	// the knee's figures; 15% more breaks it.
	at := trialAt(t, cfg, k.RequestsPerSecond)
	if !at.KeptSLO {
		t.Errorf("a steady poisson run at the knee's %g req/s breaks the SLO", k.RequestsPerSecond)
	}
	want := knee.Knee{Concurrency: at.Point.Concurrency, OutputTokensPerSecond: at.Point.OutputTokensPerSecond,
		GoodputTokensPerSecond: at.Point.GoodputTokensPerSecond, KVCacheUsage: at.Point.KVCacheUsage,
		LimitingResource: knee.ResourceCompute, Arrivals: knee.ArrivalsPoisson, RequestsPerSecond: k.RequestsPerSecond,
		ClosedLoopConcurrency: closed.Knee.Concurrency}
	if diff := cmp.Diff(want, k); diff != "" {
		t.Errorf("knee differs from a rerun of its trial (-trial +knee):\n%s", diff)
	}
	if over := trialAt(t, cfg, 1.15*k.RequestsPerSecond); over.KeptSLO {
		t.Errorf("a steady poisson run at 1.15× the knee (%g req/s) keeps the SLO: %+v", 1.15*k.RequestsPerSecond, over.Point)
	}
}

func TestFindKneePoissonIsDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("two closed-loop searches and eight short poisson trials (about two seconds)")
	}
	cfg := kneeConfig(t, "llama-3.1-8b-h100", "chat", poissonChatSLO, 1, 256)
	cfg.OpenLoop = shortOpenLoop
	first, second := poissonKnee(t, cfg), poissonKnee(t, cfg)
	if diff := cmp.Diff(first, second); diff != "" {
		t.Fatalf("same inputs, different profiles (-first +second):\n%s", diff)
	}
	if len(first.Sweep.RateLevels) != 3 {
		t.Errorf("1× and two halvings should make 3 rate levels, got %v", first.Sweep.RateLevels)
	}
}

func TestOpenLoopTrialMeasuresTheSteadyPart(t *testing.T) {
	cfg := kneeConfig(t, "llama-3.1-8b-h100", "chat", poissonChatSLO, 1, 256)
	cfg.OpenLoop = OpenLoopConfig{Warmup: time.Minute, Steady: 3 * time.Minute}
	const rate = 25.0
	lv := trialAt(t, cfg, rate)
	pt, sec := lv.Point, (3 * time.Minute).Seconds()
	t.Logf("%g req/s: %g in flight (%g running, %g waiting), %g tok/s, KV %g, kept %v", rate, pt.Concurrency, pt.Running, pt.Waiting,
		pt.OutputTokensPerSecond, pt.KVCacheUsage, lv.KeptSLO)

	if got := float64(lv.Arrived) / (4 * time.Minute).Seconds(); math.Abs(got/rate-1) > 0.05 {
		t.Errorf("%d arrivals in 4 minutes is %.2f req/s, want about %g", lv.Arrived, got, rate)
	}
	// Little's law: mean in flight = completion rate × mean time in the
	// system, up to the requests straddling the steady part's edges.
	var e2e float64
	for _, r := range lv.Window {
		e2e += r.E2E().Seconds()
	}
	little := float64(len(lv.Window)) / sec * e2e / float64(len(lv.Window))
	if math.Abs(pt.Concurrency/little-1) > 0.03 {
		t.Errorf("mean in flight %g, Little's law says %g", pt.Concurrency, little)
	}
	// A steady queue at a rate it sustains: the thirds agree with the
	// whole within its noise (the thirds' mean is not the whole's mean,
	// the middle third is left out).
	if g := lv.InFlightThirds; !(g[0] > 0) || math.Abs(g[0]/pt.Concurrency-1) > 0.25 || math.Abs(g[1]/pt.Concurrency-1) > 0.25 {
		t.Errorf("in flight over the first and last thirds %v, the whole steady part %g", g, pt.Concurrency)
	}
	if math.Abs(pt.Running+pt.Waiting-pt.Concurrency) > 1e-3 {
		t.Errorf("running %g + waiting %g ≠ in flight %g", pt.Running, pt.Waiting, pt.Concurrency)
	}
	var generated int
	for _, r := range lv.Window {
		generated += r.Generated
	}
	if got := float64(generated) / sec; math.Abs(pt.OutputTokensPerSecond/got-1) > 0.05 {
		t.Errorf("%g output tokens/s, the finished requests generated %g/s", pt.OutputTokensPerSecond, got)
	}
	if want := math.Round(pt.OutputTokensPerSecond*lv.GoodShare*1e3) / 1e3; math.Abs(pt.GoodputTokensPerSecond-want) > 2e-3 || lv.GoodShare <= 0 || lv.GoodShare > 1 {
		t.Errorf("goodput %g, want throughput × good share %g = %g", pt.GoodputTokensPerSecond, lv.GoodShare, want)
	}
	if !(pt.KVCacheUsage > 0 && pt.KVCacheUsage < 1) || pt.Requests != len(lv.Window) || pt.MeetsSLO != lv.KeptSLO {
		t.Errorf("point %+v does not describe the window of %d requests", pt, len(lv.Window))
	}

	// Latency events are in time order; TPOT is stamped at each request's
	// end, so the steady part's TPOT events are its multi-token requests.
	byTime := func(a, b knee.LatencyEvent) int { return a.At.Compare(b.At) }
	if !slices.IsSortedFunc(lv.TTFT, byTime) || !slices.IsSortedFunc(lv.TPOT, byTime) {
		t.Error("latency events are not in time order")
	}
	inSteady := 0
	for _, ev := range lv.TPOT {
		if ev.At.After(lv.SteadyFrom) && !ev.At.After(lv.End) {
			inSteady++
		}
	}
	multi := 0
	for _, r := range lv.Window {
		if r.Generated > 1 {
			multi++
		}
	}
	if inSteady != multi || multi == 0 {
		t.Errorf("%d TPOT events in the steady part, %d multi-token requests finished in it", inSteady, multi)
	}
	if len(lv.TTFT) < lv.Arrived-int(3*pt.Concurrency) {
		t.Errorf("%d TTFT events for %d arrivals", len(lv.TTFT), lv.Arrived)
	}

	// A trial depends on its rate and seed only.
	again := trialAt(t, cfg, rate)
	if diff := cmp.Diff(lv.Point, again.Point); diff != "" {
		t.Errorf("the same trial twice gives different points (-first +second):\n%s", diff)
	}
}

// TestAnOpenLoopTrialPastCapacityShowsItsQueueGrowing: twice the rate the
// replica serves, the requests in flight over the last third of the steady
// part are several times those over the first (the sweep's runaway test
// reads the same from its client).
func TestAnOpenLoopTrialPastCapacityShowsItsQueueGrowing(t *testing.T) {
	cfg := kneeConfig(t, "llama-3.1-8b-h100", "chat", poissonChatSLO, 1, 256)
	cfg.OpenLoop = OpenLoopConfig{Warmup: time.Minute, Steady: 3 * time.Minute}
	lv := trialAt(t, cfg, 150)
	if g := lv.InFlightThirds; !(g[1] > 2*g[0]) || lv.KeptSLO {
		t.Errorf("150 req/s: in flight over the first and last thirds %v, kept %v; want the queue growing, the SLO broken", g, lv.KeptSLO)
	}
}

// TestATrialCanBeJudgedAsTheSweepJudgesIt: held to half its thresholds, a
// trial that keeps the SLO at them does not; and a rate past what the
// replica serves, under an SLO so loose no window breaks it, is kept at the
// thresholds alone and not under the sweep's runaway test, which says so.
func TestATrialCanBeJudgedAsTheSweepJudgesIt(t *testing.T) {
	cfg := kneeConfig(t, "llama-3.1-8b-h100", "chat", poissonChatSLO, 1, 256)
	cfg.OpenLoop = OpenLoopConfig{Warmup: time.Minute, Steady: 3 * time.Minute}
	if lv := trialAt(t, cfg, 25); !lv.KeptSLO {
		t.Fatalf("25 req/s: not kept at the thresholds; the case needs a trial that keeps them")
	}
	cfg.OpenLoopVerdict = TrialVerdict{ThresholdShare: 0.2}
	if lv := trialAt(t, cfg, 25); lv.KeptSLO || lv.RanAway {
		t.Errorf("25 req/s at 20%% of the thresholds: kept %v, ran away %v; want broken by the windows", lv.KeptSLO, lv.RanAway)
	}

	cfg.SLO = knee.SLO{TTFT: knee.Duration(time.Hour), TPOT: knee.Duration(time.Minute), Quantile: 0.99}
	cfg.OpenLoopVerdict = TrialVerdict{}
	if lv := trialAt(t, cfg, 150); !lv.KeptSLO {
		t.Fatalf("150 req/s under an SLO of an hour: not kept; the case needs windows that never break")
	}
	cfg.OpenLoopVerdict = TrialVerdict{Runaway: measure.DefaultRunaway}
	if lv := trialAt(t, cfg, 150); lv.KeptSLO || !lv.RanAway {
		t.Errorf("150 req/s under the sweep's runaway test: kept %v, ran away %v (in flight %v); want a runaway", lv.KeptSLO, lv.RanAway, lv.InFlightThirds)
	}
	if _, err := RunOpenLoop(context.Background(), OpenLoopLevelConfig{Engine: cfg.Engine, Workload: cfg.Workload, Rate: 1, SLO: cfg.SLO,
		Verdict: TrialVerdict{ThresholdShare: 1.5}}); err == nil || !strings.Contains(err.Error(), "threshold share must be in (0, 1], got 1.5") {
		t.Errorf("a share of 1.5: error %v", err)
	}
}

func TestFindKneePoissonBelowOneRequestInFlightIsPutOnTheCurve(t *testing.T) {
	// 8B on an L4, ten times faster, with an SLO that only concurrency 1–2
	// meets: the poisson knee rate leaves the replica mostly idle.
	slo := knee.SLO{TTFT: knee.Duration(45 * time.Millisecond), TPOT: knee.Duration(6100 * time.Microsecond), Quantile: 0.99}
	cfg := kneeConfig(t, "llama-3.1-8b-l4", "chat", slo, 10, 2)
	cfg.OpenLoop = OpenLoopConfig{Warmup: time.Minute, Steady: 5 * time.Minute}
	var logs bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	prof := poissonKnee(t, cfg)
	inFlight := trialAt(t, cfg, prof.Knee.RequestsPerSecond).Point.Concurrency
	if !(inFlight < 1) || prof.Knee.Concurrency != 1 {
		t.Fatalf("in flight %g at the knee's %g req/s, knee concurrency %g; want under 1 moved to the first point, 1",
			inFlight, prof.Knee.RequestsPerSecond, prof.Knee.Concurrency)
	}
	if want := "lie outside the closed-loop curve; the knee is put at its nearest end"; !strings.Contains(logs.String(), want) {
		t.Errorf("log %q does not explain the move (%q)", logs.String(), want)
	}
}

func TestFindKneePoissonSaysWhenEvenTheLowRateBreaksTheSLO(t *testing.T) {
	// A TTFT-bound SLO whose Poisson knee lies near 0.91× the closed-loop
	// rate: with the low end at 0.95× every halving breaks, and so does the
	// low end, tried last.
	slo := knee.SLO{TTFT: knee.Duration(150 * time.Millisecond), TPOT: knee.Duration(time.Second), Quantile: 0.99}
	cfg := kneeConfig(t, "llama-3.1-8b-h100", "chat", slo, 1, 256)
	cfg.Arrivals = knee.ArrivalsPoisson
	cfg.OpenLoop = OpenLoopConfig{Warmup: time.Minute, Steady: 4 * time.Minute, Low: 0.95}
	prof, err := FindKnee(context.Background(), cfg)
	if !errors.Is(err, ErrOpenLoopSLOUnreachable) {
		t.Fatalf("got %v, want ErrOpenLoopSLOUnreachable", err)
	}
	for _, want := range []string{"the SLO breaks under Poisson arrivals even at the lowest rate tried: workload chat at ",
		"(0.95× the closed-loop knee's ", "lower the open-loop low bound or loosen the SLO"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if prof.Knee.Concurrency <= 0 || prof.Knee.Arrivals != "" {
		t.Errorf("want the closed-loop profile with the error, got knee %+v", prof.Knee)
	}
}

func TestFindKneeRejectsBadOpenLoopConfig(t *testing.T) {
	tests := []struct {
		name     string
		arrivals knee.Arrivals
		ol       OpenLoopConfig
		want     string
	}{
		{"low at 1", knee.ArrivalsPoisson, OpenLoopConfig{Low: 1},
			"open loop: low must be in (0,1) as a multiple of the rate the search starts from (0 = default), got 1"},
		{"low negative", knee.ArrivalsPoisson, OpenLoopConfig{Low: -0.1},
			"open loop: low must be in (0,1) as a multiple of the rate the search starts from (0 = default), got -0.1"},
		{"low not a number", knee.ArrivalsPoisson, OpenLoopConfig{Low: math.NaN()},
			"open loop: low must be in (0,1) as a multiple of the rate the search starts from (0 = default), got NaN"},
		{"negative steps", knee.ArrivalsPoisson, OpenLoopConfig{Steps: -1}, "open loop: steps must be ≥ 0 (0 = default), got -1"},
		{"negative warmup", knee.ArrivalsPoisson, OpenLoopConfig{Warmup: -time.Minute}, "open loop: warmup must be ≥ 0 (0 = default), got -1m0s"},
		{"negative steady part", knee.ArrivalsPoisson, OpenLoopConfig{Steady: -time.Second}, "open loop: steady must be ≥ 0 (0 = default), got -1s"},
		{"negative tick", knee.ArrivalsPoisson, OpenLoopConfig{Tick: -time.Second}, "open loop: tick must be ≥ 0 (0 = default), got -1s"},
		{"negative SLO window", knee.ArrivalsPoisson, OpenLoopConfig{SLOWindow: -time.Second}, "open loop: SLO window must be ≥ 0 (0 = default), got -1s"},
		{"tick longer than the steady part", knee.ArrivalsPoisson, OpenLoopConfig{Steady: time.Second},
			"open loop: tick 5s is longer than the steady part 1s, so the SLO would never be judged"},
		{"unknown arrivals", "open", OpenLoopConfig{}, `unknown arrivals "open" (known: closed-loop, poisson)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := kneeConfig(t, "llama-3.1-8b-h100", "chat", poissonChatSLO, 1, 256)
			cfg.Arrivals, cfg.OpenLoop = tt.arrivals, tt.ol
			_, err := FindKnee(context.Background(), cfg)
			if err == nil || err.Error() != tt.want {
				t.Errorf("got %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestRunOpenLoopRejectsABadRate(t *testing.T) {
	cfg := kneeConfig(t, "llama-3.1-8b-h100", "chat", poissonChatSLO, 1, 256)
	for _, rate := range []float64{0, -1, math.Inf(1), math.NaN()} {
		_, err := RunOpenLoop(context.Background(), OpenLoopLevelConfig{Engine: cfg.Engine, Workload: cfg.Workload, Rate: rate, SLO: cfg.SLO})
		if want := "open loop: the arrival rate must be a finite number > 0 requests/s, got "; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("rate %v: got %v, want %q…", rate, err, want)
		}
	}
}

func TestFindKneeIsClosedLoopByDefault(t *testing.T) {
	cfg := kneeConfig(t, "llama-3.1-8b-h100", "chat", chatSLO, 1, 32)
	byDefault, err := FindKnee(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Arrivals = knee.ArrivalsClosedLoop
	cfg.OpenLoop = OpenLoopConfig{Low: 0.5} // ignored closed-loop
	explicit, err := FindKnee(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(byDefault, explicit); diff != "" {
		t.Errorf("explicit closed-loop differs from the default (-default +explicit):\n%s", diff)
	}
	if byDefault.Knee.Arrivals != "" || byDefault.Knee.RequestsPerSecond != 0 || byDefault.Sweep.RateLevels != nil {
		t.Errorf("a closed-loop knee carries poisson fields: %+v, rate levels %v", byDefault.Knee, byDefault.Sweep.RateLevels)
	}
}
