package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
	"github.com/kneewatch/kneewatch/workload"
)

// LevelConfig is one closed-loop measurement: Concurrency clients, each
// sending its next request the moment the previous one finishes.
type LevelConfig struct {
	Engine      Config
	Workload    *workload.Generator
	Concurrency int
	SLO         knee.SLO

	// WarmupRequests completions are discarded before the window opens;
	// 0 means max(50, 3 × Concurrency), enough for every client to turn over
	// a few times so the synchronised start (all prompts arriving at once)
	// has washed out.
	WarmupRequests int
	// WindowRequests completions make the steady-state window; 0 means
	// max(1000, 16 × Concurrency). A p99 needs at least 200 requests, so that
	// it interpolates between the 2nd and 3rd slowest instead of being the
	// single worst one, which would jump from run to run; 1000 keeps the
	// run-to-run spread of throughput and p99 TPOT near 1% (it is ±2–3% at
	// 400), which matters because the sweep compares neighbouring levels.
	// Higher concurrency needs more so every client contributes ~16 requests
	// and the mix's long tail is sampled at every slot. Virtual time makes
	// this cheap: ~65 ms of CPU for concurrency 256.
	WindowRequests int
	// Early lets the level stop before its window fills, as the sweep's
	// levels do (measure.Tally; the zero value never stops early), and
	// MayScreen is the search's permission to screen. With them the level
	// runs as `kneewatch sweep` would, so its Elapsed is what the sweep
	// would spend on it at real speed.
	Early     measure.Early
	MayScreen bool
}

// Level is a measured level: the profile point plus the raw requests of the
// window, for tests and reports.
type Level struct {
	Point knee.Point
	// Window lists the requests that finished in the steady-state window.
	Window []*Request
	// Duration is the window's length in engine time.
	Duration time.Duration
	// Clamped counts requests whose prompt or output was cut to fit max_model_len.
	Clamped int
	// Margin is the larger of TTFT and TPOT at the SLO quantile ÷ their
	// thresholds (measure.Summary.Margin); the search interpolates on it.
	Margin float64
	// Elapsed is the level's whole length in engine time, warm-up included.
	Elapsed time.Duration
	// Stopped and StoppedWhy say whether Early ended the level before its
	// window filled, and why.
	Stopped    measure.Verdict
	StoppedWhy string
}

// RunLevel runs the engine in virtual time at a fixed concurrency and
// measures the steady-state window. Clients start staggered over one mean
// request lifetime, and each sends its next request at the instant its
// previous one finishes (no think time). Requests longer than
// max_model_len are cut to fit (see Level.Clamped). Throughput is the output tokens the
// engine produced in the window divided by its length; goodput weights it by
// the share of tokens from window requests meeting both the TTFT and the
// TPOT threshold (a single-token request has no TPOT and is judged on TTFT).
// MeetsSLO holds when the SLO quantile of TTFT and of TPOT over the window
// are within the thresholds. KV usage, running and waiting are time-weighted
// means over the window's steps.
func RunLevel(ctx context.Context, cfg LevelConfig) (Level, error) {
	if cfg.Concurrency < 1 {
		return Level{}, fmt.Errorf("concurrency must be ≥ 1, got %d", cfg.Concurrency)
	}
	if cfg.Workload == nil {
		return Level{}, errors.New("no workload generator")
	}
	if err := validateSLO(cfg.SLO); err != nil {
		return Level{}, err
	}
	e, err := NewEngine(cfg.Engine)
	if err != nil {
		return Level{}, err
	}
	warm := cfg.WarmupRequests
	if warm <= 0 {
		warm = max(50, 3*cfg.Concurrency)
	}
	window := cfg.WindowRequests
	if window <= 0 {
		window = max(1000, 16*cfg.Concurrency)
	}
	if err := cfg.Early.Validate(); err != nil {
		return Level{}, err
	}
	tally := cfg.Early.Start(cfg.SLO, cfg.Concurrency, cfg.MayScreen)

	var (
		lv      Level
		nextID  uint64
		now     = time.Unix(0, 0).UTC()
		maxLen  = e.p.MaxModelLen
		clamped int
	)
	submit := func(at time.Time) error {
		w := cfg.Workload.Next()
		prompt, output, cut := fitModelLen(w.PromptTokens, w.OutputTokens, maxLen)
		if cut {
			clamped++
		}
		nextID++
		return e.Submit(&Request{ID: nextID, PromptTokens: prompt, MaxTokens: output, Arrival: at})
	}
	// Clients start staggered over one mean request lifetime in steps (a
	// prefill step plus one step per output token), so their phases spread
	// evenly over the cycle. Started all at once, requests of equal length
	// would prefill together and finish together forever: a lockstep no real
	// load generator shows, which would inflate TTFT with whole-batch prefills.
	cycle := max(1, int(math.Round(cfg.Workload.Info().MeanOutputTokens)))
	started := 0
	startDue := func(step int) bool { return started < cfg.Concurrency && started*cycle <= step*cfg.Concurrency }

	var (
		done                      int
		start                     time.Time // window start: time of the warm-th completion
		inWindow                  bool
		kvArea, runArea, waitArea float64 // ∫ x dt over the window, in x·seconds
		preemptions               int
		tokens                    int // output tokens produced in the window
		// A request alone needs at most max_model_len steps; four times that
		// for every request of the run means the engine stopped making progress.
		maxSteps = 4 * (warm + window + cfg.Concurrency) * maxLen
	)
	for steps := 0; ; steps++ {
		if steps%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return Level{}, err
			}
		}
		if steps > maxSteps {
			return Level{}, fmt.Errorf("concurrency %d: no progress after %d steps", cfg.Concurrency, steps)
		}
		for startDue(steps) || (e.Idle() && started < cfg.Concurrency) {
			if err := submit(now); err != nil {
				return Level{}, err
			}
			started++
		}
		res := e.Step(now)
		if res.Duration <= 0 {
			return Level{}, fmt.Errorf("concurrency %d: engine stalled with %d waiting", cfg.Concurrency, e.State().Waiting)
		}
		now = res.End
		if inWindow {
			st := e.State()
			dt := res.Duration.Seconds()
			kvArea += st.KVUsage * dt
			runArea += float64(st.Running) * dt
			waitArea += float64(st.Waiting) * dt
			preemptions += len(res.Preempted)
			tokens += len(res.Tokens)
		}
		for _, r := range res.Finished {
			done++
			switch {
			case done == warm:
				start, inWindow = now, true
			case inWindow && tally.Verdict() == measure.Undecided:
				lv.Window = append(lv.Window, r)
				tally.Add(sampleOf(r))
			}
			if err := submit(now); err != nil {
				return Level{}, err
			}
		}
		if inWindow && (len(lv.Window) >= window || tally.Verdict() != measure.Undecided) {
			break
		}
	}
	lv.Duration = now.Sub(start)
	lv.Elapsed = now.Sub(time.Unix(0, 0))
	lv.Clamped = clamped
	lv.Stopped, lv.StoppedWhy = tally.Verdict(), tally.Reason()
	sec := lv.Duration.Seconds()
	sum := summarize(lv.Window, float64(tokens)/sec, sec, cfg.SLO)
	lv.Point, lv.Margin = sum.Point, sum.Margin
	lv.Point.Concurrency = float64(cfg.Concurrency)
	if lv.Stopped == measure.Breaks {
		lv.Point.MeetsSLO = false // the test's verdict stands (see measure.Early)
	}
	lv.Point.KVCacheUsage = min(kvArea/sec, 1)
	lv.Point.Running = runArea / sec
	lv.Point.Waiting = waitArea / sec
	lv.Point.PreemptionsPerSecond = float64(preemptions) / sec
	tidy(&lv.Point)
	return lv, nil
}

// tidy rounds a point's figures for people reading the profile: latencies
// to the nanosecond (the engine's resolution, so a p99 at or under a
// threshold stays so), rates to a thousandth, means to a millionth.
func tidy(pt *knee.Point) {
	for _, x := range []*float64{&pt.TTFT.P50, &pt.TTFT.P99, &pt.TPOT.P50, &pt.TPOT.P99} {
		*x = math.Round(*x*1e9) / 1e9
	}
	for _, x := range []*float64{&pt.RequestsPerSecond, &pt.OutputTokensPerSecond, &pt.GoodputTokensPerSecond, &pt.PreemptionsPerSecond} {
		*x = math.Round(*x*1e3) / 1e3
	}
	for _, x := range []*float64{&pt.KVCacheUsage, &pt.Running, &pt.Waiting} {
		*x = math.Round(*x*1e6) / 1e6
	}
}

// fitModelLen cuts a drawn request to fit max_model_len the way a client
// that respects the limit would: output first (max_tokens = what is left),
// then the prompt (truncated), keeping at least one output token.
func fitModelLen(prompt, output, maxLen int) (int, int, bool) {
	if prompt+output <= maxLen {
		return prompt, output, false
	}
	prompt = min(prompt, maxLen-1)
	return prompt, maxLen - prompt, true
}

// summarize judges the window by the measurement engine's one rule
// (measure.Summarize), with the output token rate the engine produced in
// it: goodput is that rate times the share of the finished requests'
// tokens that belong to requests meeting both thresholds, the same
// expectation as counting good tokens directly, with the lower variance of
// the step-level token count.
func summarize(window []*Request, tokensPerSec, sec float64, slo knee.SLO) measure.Summary {
	samples := make([]measure.Sample, len(window))
	for i, r := range window {
		samples[i] = sampleOf(r)
	}
	return measure.Summarize(samples, time.Duration(sec*float64(time.Second)), tokensPerSec, slo)
}

// sampleOf is a finished request as the measurement engine judges it.
func sampleOf(r *Request) measure.Sample {
	tpot, has := r.TPOT()
	return measure.Sample{TTFT: r.TTFT(), TPOT: tpot, HasTPOT: has, OutputTokens: r.Generated}
}

func validateSLO(slo knee.SLO) error {
	switch {
	case slo.TTFT <= 0:
		return fmt.Errorf("SLO TTFT threshold must be > 0, got %s", slo.TTFT.D())
	case slo.TPOT <= 0:
		return fmt.Errorf("SLO TPOT threshold must be > 0, got %s", slo.TPOT.D())
	case !(slo.Quantile > 0 && slo.Quantile < 1):
		return fmt.Errorf("SLO quantile must be in (0,1), got %v", slo.Quantile)
	}
	return nil
}

// Outcome is what the level tells a measure.Search.
func (lv Level) Outcome() measure.Outcome {
	return measure.Outcome{Good: lv.Point.MeetsSLO, Margin: lv.Margin, TokensPerSecond: lv.Point.OutputTokensPerSecond,
		Screened: lv.Stopped == measure.Screened}
}

// DriveSearch measures each level search asks for in virtual time, with
// the settings levelAt gives for that step, and records its outcome, until
// the search ends. It returns the concurrencies and levels in run order (a
// confirmed level appears twice). FindKnee drives its search this way, and
// the benches that emulate `kneewatch sweep` in virtual time drive the
// sweep's search settings the same way.
func DriveSearch(ctx context.Context, search *measure.Search, levelAt func(step measure.Step) LevelConfig) ([]int, []Level, error) {
	var concs []int
	var levels []Level
	for {
		step, ok := search.Next()
		if !ok {
			return concs, levels, nil
		}
		cfg := levelAt(step)
		cfg.Concurrency = step.Concurrency
		lv, err := RunLevel(ctx, cfg)
		if err != nil {
			return concs, levels, fmt.Errorf("concurrency %d: %w", step.Concurrency, err)
		}
		concs, levels = append(concs, step.Concurrency), append(levels, lv)
		search.Record(step.Concurrency, lv.Outcome())
	}
}
