package sweep

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
)

// LevelConfig is one closed-loop measurement at a fixed concurrency.
type LevelConfig struct {
	Concurrency int
	// Warmup completions are discarded before the window opens (0 means
	// DefaultWarmup).
	Warmup int
	// Window completions make the steady-state window (must be ≥ 1).
	Window int
	// Ramp spreads the workers' first requests over this long, so the level
	// does not start with one synchronized prefill wave.
	Ramp time.Duration
	// Timeout ends a level whose window has not filled by then; the level
	// is judged on what completed (0 means no limit).
	Timeout time.Duration
	// Next returns the next request; it must be safe for concurrent use.
	Next func() Request
	SLO  knee.SLO
	// Metrics, when set, is scraped while the level runs.
	Metrics *Metrics
	// OnCompletion, when set, is called after every completed request with
	// the number completed so far (warm-up included); for progress bars.
	OnCompletion func(done int)
	// Early lets the level stop before its window fills when its verdict
	// is already clear (the zero value never does); MayScreen is the
	// search's permission to stop on a screening window.
	Early     measure.Early
	MayScreen bool
}

// DefaultWarmup is the warm-up for concurrency c: every worker turns over
// once, so every request in flight when the window opens was sent by this
// level and the staggered start has washed out, plus up to 8 more. It was
// 2c + 8; at concurrency 1 with 9-second requests that was 90 s before a
// level's first measured request, and past 128 it was a third of a level.
// At concurrency 1 nothing is staggered, and the one turnover is the whole
// warm-up: on make bench-sweep (2026-12-06) that took about one request at
// concurrency 1 (1 to 42 s) off every sweep and moved no knee.
//
// Half the turnover, (c+1)/2 + min(c, 8), was measured and not kept
// (2026-12-07): past concurrency 64 the warm-up is most of a level (at 256
// on 70B/H200 code, 2m7s of 2m13s), and on make bench-sweep it shortened
// the Poisson sweep's doubling in 27 of 28 deployments (median 11%, up to
// 61%; the 70B/H200 code loose sweep 22m36s → 19m55s) and the full
// closed-loop search in 24 of 28 (median 10%; 8B/H100 summarize loose
// took 33% longer), with the closed-loop knees within ±10% unchanged, 12
// of 14 on each half. But the window then opens with about half the first
// requests still in flight, sent while the level filled and served by a
// lighter replica, and the simulator's levels stagger their first requests
// over a loaded request's lifetime where the sweep staggers them over one
// request alone's (Ramp, the probe's), so the bench would not show what
// that costs against a real server.
func DefaultWarmup(c int) int {
	if c == 1 {
		return 1
	}
	return c + min(c, 8)
}

// Level is one measured concurrency level.
type Level struct {
	Point knee.Point
	// Margin is the larger of TTFT ÷ its threshold and TPOT ÷ its
	// threshold, both at the SLO quantile: at most 1 meets the latency SLO.
	// The refinement interpolates on it.
	Margin float64
	// TTFTAtQuantile and TPOTAtQuantile are the SLO quantile's values, in seconds.
	TTFTAtQuantile, TPOTAtQuantile float64
	Errors                         int
	// Duration is the window's length, from the warm-up's last completion
	// to the window's last.
	Duration time.Duration
	// Results are the window's requests, failures included.
	Results []Result
	// MeanE2E is the mean end-to-end latency of the window's successful
	// requests; the next level ramps its workers up over this long.
	MeanE2E time.Duration
	// CutShort is set when the level's timeout ended it before the window filled.
	CutShort bool
	// PromptMismatch and OutputShort count window requests whose usage
	// disagreed with the request (a tokenizer other than the word rule; a
	// server that stops before max_tokens).
	PromptMismatch, OutputShort int
	// MetricProblems say why engine or GPU figures are missing.
	MetricProblems []string
	// Stopped says whether the sequential rule ended the level before its
	// window filled (measure.Breaks or measure.Screened), and StoppedWhy
	// says so with the rule's confidence.
	Stopped    measure.Verdict
	StoppedWhy string
}

// collectorState gathers one level's results from many workers.
type levelCollector struct {
	mu          sync.Mutex
	warmup, win int
	done        int
	open        time.Time
	results     []Result
	last        time.Time
	opened      chan struct{}
	full        chan struct{}
	onDone      func(int)
	tally       *measure.Tally
}

func (lc *levelCollector) add(r Result) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if len(lc.results) >= lc.win {
		return // the window is full; stragglers are not measured
	}
	now := time.Now()
	lc.done++
	switch {
	case lc.done == lc.warmup:
		lc.open = now
		close(lc.opened)
	case lc.done > lc.warmup:
		lc.results = append(lc.results, r)
		lc.last = now
		if lc.tally.Add(sample(r)) != measure.Undecided || len(lc.results) == lc.win {
			close(lc.full)
			lc.win = len(lc.results) // later results are not measured
		}
	}
	if lc.onDone != nil {
		lc.onDone(lc.done)
	}
}

// RunLevel drives client closed-loop at cfg.Concurrency: each worker sends
// its next request the moment its previous one completes. After Warmup
// completions the window opens; it closes at the Window-th completion after
// that. In-flight requests at the close are cancelled and not measured.
func RunLevel(ctx context.Context, client *Client, cfg LevelConfig) (Level, error) {
	if cfg.Concurrency < 1 {
		return Level{}, fmt.Errorf("concurrency must be ≥ 1, got %d", cfg.Concurrency)
	}
	if cfg.Window < 1 {
		return Level{}, fmt.Errorf("window must be ≥ 1 request, got %d", cfg.Window)
	}
	warm := cfg.Warmup
	if warm <= 0 {
		warm = DefaultWarmup(cfg.Concurrency)
	}
	if err := cfg.Early.Validate(); err != nil {
		return Level{}, err
	}
	lc := &levelCollector{warmup: warm, win: cfg.Window, opened: make(chan struct{}), full: make(chan struct{}),
		onDone: cfg.OnCompletion, tally: cfg.Early.Start(cfg.SLO, cfg.Concurrency, cfg.MayScreen)}
	var smp *sampler
	if cfg.Metrics.enabled() {
		smp = cfg.Metrics.start(ctx)
		defer smp.stop()
	}
	loop := &ClosedLoop{Client: client, Next: cfg.Next, OnResult: lc.add, Ramp: cfg.Ramp}
	levelCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	loop.SetConcurrency(levelCtx, cfg.Concurrency)
	defer loop.Stop()

	var timeout <-chan time.Time
	if cfg.Timeout > 0 {
		t := time.NewTimer(cfg.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	cutShort := false
	select {
	case <-ctx.Done():
		return Level{}, ctx.Err()
	case <-lc.opened:
		if smp != nil {
			smp.scrapeNow()
		}
		select {
		case <-ctx.Done():
			return Level{}, ctx.Err()
		case <-lc.full:
		case <-timeout:
			cutShort = true
		}
	case <-timeout:
		cutShort = true
	}
	var metricsEnd time.Time
	if smp != nil {
		smp.scrapeNow()
		metricsEnd = time.Now()
	}
	cancel()
	loop.Stop()

	lc.mu.Lock()
	results, open, last := lc.results, lc.open, lc.last
	lc.win = 0 // late results are dropped
	lc.mu.Unlock()
	// A level cut short before its window opened has no results: it is
	// judged as past the knee (not even the warm-up completed in time).
	var d time.Duration
	if !open.IsZero() && !last.IsZero() {
		d = last.Sub(open)
	}
	st := summarize(results, d, cfg.SLO)
	lv := Level{
		Point: st.point, Margin: st.margin, TTFTAtQuantile: st.ttftQ, TPOTAtQuantile: st.tpotQ,
		Errors: st.errors, Duration: d, Results: results, CutShort: cutShort,
		PromptMismatch: st.promptMismatch, OutputShort: st.outputShort,
		Stopped: lc.tally.Verdict(), StoppedWhy: lc.tally.Reason(),
	}
	lv.Point.Concurrency = float64(cfg.Concurrency)
	if lv.Stopped == measure.Breaks {
		// The test's verdict stands even if the short window's sample
		// quantile happens to sit under the threshold.
		lv.Point.MeetsSLO = false
	}
	var e2e time.Duration
	for _, r := range results {
		if r.Err == nil {
			e2e += r.E2E
		}
	}
	if st.point.Requests > 0 {
		lv.MeanE2E = e2e / time.Duration(st.point.Requests)
	}
	if smp != nil {
		rd := smp.readings(open, metricsEnd)
		lv.Point.KVCacheUsage = min(max(rd.kvUsage, 0), 1)
		lv.Point.Running, lv.Point.Waiting = rd.running, rd.waiting
		lv.Point.PreemptionsPerSecond = rd.preemptionRate
		lv.Point.GPUUtilization = rd.gpuUtil
		lv.MetricProblems = rd.problems
	}
	round(&lv.Point)
	return lv, nil
}
