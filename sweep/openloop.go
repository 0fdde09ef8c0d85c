package sweep

import (
	"fmt"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// Defaults for OpenLoopConfig fields left zero.
const (
	DefaultOpenLoopWarmup = time.Minute
	DefaultOpenLoopSteady = 10 * time.Minute
	DefaultOpenLoopTick   = 5 * time.Second
	DefaultOpenLoopLow    = 0.2
	DefaultOpenLoopSteps  = 5
	// DefaultOutstandingFactor × the closed-loop knee concurrency is the
	// default cap on a trial's outstanding requests.
	DefaultOutstandingFactor = 4
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
}

func (o *OpenLoopConfig) defaults() error {
	if o.MaxOutstanding < 0 {
		return fmt.Errorf("sweep: open loop: the outstanding cap must be ≥ 0 (0 = default), got %d", o.MaxOutstanding)
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
