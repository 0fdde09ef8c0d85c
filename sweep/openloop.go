package sweep

import (
	"fmt"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// Defaults for OpenLoopConfig fields left zero.
const (
	DefaultOpenLoopWarmup = time.Minute
	// DefaultOpenLoopSteady is the shortest steady part: one SLO window, so
	// a fast deployment's trial still shows a bad minute of bunching.
	DefaultOpenLoopSteady = 2 * time.Minute
	// DefaultOpenLoopRequests is how many arrivals a trial's steady part
	// holds at least: one and a half windows of knee.MinWindowRequests, so
	// a slow deployment's trial is judged rather than left unknown. Trials
	// were 1 + 10 min at any rate: 77 min for a sweep whose knee serves
	// 1 request/s, and unjudged below 0.17 request/s.
	DefaultOpenLoopRequests = 150
	DefaultOpenLoopTick     = 5 * time.Second
	DefaultOpenLoopLow      = 0.2
	// DefaultOpenLoopSteps halvings of [Low, 1] put the rate within
	// (1 − Low) ÷ 2⁴ = 5% of the closed-loop knee's rate.
	DefaultOpenLoopSteps = 4
	// DefaultOutstandingFactor × the closed-loop knee concurrency is the
	// default cap on a trial's outstanding requests.
	DefaultOutstandingFactor = 4
	// DefaultThresholdShare is the share of each SLO threshold a trial's
	// windowed percentiles must stay within. A trial of a few minutes
	// meets fewer bad windows than a long run at the same rate, and the
	// worst of a few windows is lower than the worst of many: judged at
	// the thresholds themselves, the sweep's trials kept rates that
	// 20-minute runs broke. Over the suite's deployments, four seeds each
	// (make bench-sweep's halves; TestSweepPoissonVariants), one sweep's
	// poisson knee was within ±10% of the truth's median in 25 of 56
	// sweeps of half A and 35 of 56 of half B, its median reading +11%
	// high on A; judged at 0.9 of each threshold, 32 and 39 of 56, +6.5%
	// on A, in the same trial time. 0.9 was chosen on half A (0.95: 28,
	// 0.8: 29, 0.75: 31, 0.7: 25 of 56); half B was held out.
	DefaultThresholdShare = 0.9
)

// OpenLoopConfig is how `--arrivals poisson` measures the knee after the
// closed-loop search: knee.PoissonSearch's settings, whose zero fields take
// the DefaultOpenLoop* above (the sweep's own, not the simulator's), and a
// cap on a trial's outstanding requests.
type OpenLoopConfig struct {
	knee.PoissonSearch
	// MaxOutstanding caps a trial's requests in flight: a trial past the
	// knee would otherwise pile unbounded load on the replica. Reaching it
	// ends the trial as one that did not keep the SLO (0 means
	// DefaultOutstandingFactor × the closed-loop knee concurrency).
	MaxOutstanding int
	// Requests sizes each trial's steady part: it runs until that many
	// requests have been sent at the trial's rate, and at least Steady
	// (0 means DefaultOpenLoopRequests).
	Requests int
	// ThresholdShare, in (0, 1], is the share of each SLO threshold a
	// trial's windowed percentiles must stay within to keep the SLO (0
	// means DefaultThresholdShare; 1 judges at the thresholds). Goodput
	// is counted against the thresholds themselves.
	ThresholdShare float64
	// Searches is how many times the rate is searched, each search on
	// other draws of the workload and arrivals; the knee is the median
	// search's (0 means 1). See runPoisson for what a repeat buys.
	Searches int
}

// MaxSearches bounds OpenLoopConfig.Searches: each search costs its trials
// again, about as long as the first.
const MaxSearches = 9

// SteadyFor is the steady part of a trial at rate requests/s.
func (o OpenLoopConfig) SteadyFor(rate float64) time.Duration {
	need := time.Duration(float64(o.Requests) / rate * float64(time.Second))
	return max(o.Steady, need.Round(time.Second))
}

func (o *OpenLoopConfig) defaults() error {
	if o.MaxOutstanding < 0 {
		return fmt.Errorf("sweep: open loop: the outstanding cap must be ≥ 0 (0 = default), got %d", o.MaxOutstanding)
	}
	if o.Requests < 0 {
		return fmt.Errorf("sweep: open loop: the requests per trial must be ≥ 0 (0 = default), got %d", o.Requests)
	}
	if o.Requests == 0 {
		o.Requests = DefaultOpenLoopRequests
	}
	if o.Searches < 0 || o.Searches > MaxSearches {
		return fmt.Errorf("sweep: open loop: the searches must be 1 to %d (0 = 1), got %d", MaxSearches, o.Searches)
	}
	if o.Searches == 0 {
		o.Searches = 1
	}
	if o.ThresholdShare == 0 {
		o.ThresholdShare = DefaultThresholdShare
	}
	if !(o.ThresholdShare > 0 && o.ThresholdShare <= 1) { // NaN fails both comparisons
		return fmt.Errorf("sweep: open loop: the threshold share must be in (0, 1] (0 = default %g), got %v", DefaultThresholdShare, o.ThresholdShare)
	}
	s, err := o.PoissonSearch.WithDefaults(knee.PoissonSearch{
		Warmup: DefaultOpenLoopWarmup, Steady: DefaultOpenLoopSteady, Tick: DefaultOpenLoopTick,
		SLOWindow: knee.DefaultSLOWindow, Low: DefaultOpenLoopLow, Steps: DefaultOpenLoopSteps,
	})
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	o.PoissonSearch = s
	return nil
}
