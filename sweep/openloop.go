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
// closed-loop search. Zero fields take their defaults.
type OpenLoopConfig struct {
	// Warmup runs a trial's rate before its SLO is judged, so the queue
	// reaches its steady state (0 means DefaultOpenLoopWarmup).
	Warmup time.Duration
	// Steady is the part of a trial judged (0 means DefaultOpenLoopSteady).
	Steady time.Duration
	// Tick is how often in the steady part the windowed SLO is judged (0
	// means DefaultOpenLoopTick, a Prometheus scrape interval).
	Tick time.Duration
	// SLOWindow is the width of the windowed percentiles (0 means
	// knee.DefaultSLOWindow).
	SLOWindow time.Duration
	// Low is the first rate tried, as a fraction of the closed-loop knee's
	// request rate; it must keep the SLO (0 means DefaultOpenLoopLow).
	Low float64
	// Steps is the number of halvings after Low and 1 (0 means DefaultOpenLoopSteps).
	Steps int
	// MaxOutstanding caps a trial's requests in flight: a trial past the
	// knee would otherwise pile unbounded load on the replica. Reaching it
	// ends the trial as one that did not keep the SLO (0 means
	// DefaultOutstandingFactor × the closed-loop knee concurrency).
	MaxOutstanding int
}

func (o *OpenLoopConfig) defaults() error {
	switch {
	case o.Warmup < 0:
		return fmt.Errorf("sweep: the open-loop warm-up must be ≥ 0, got %s", o.Warmup)
	case o.Steady < 0:
		return fmt.Errorf("sweep: the open-loop steady part must be ≥ 0, got %s", o.Steady)
	case o.Tick < 0:
		return fmt.Errorf("sweep: the open-loop tick must be ≥ 0, got %s", o.Tick)
	case o.SLOWindow < 0:
		return fmt.Errorf("sweep: the open-loop SLO window must be ≥ 0, got %s", o.SLOWindow)
	case o.Low != 0 && !(o.Low > 0 && o.Low < 1):
		return fmt.Errorf("sweep: the open-loop low rate must be in (0,1) of the closed-loop knee's rate, got %v", o.Low)
	case o.Steps < 0:
		return fmt.Errorf("sweep: the open-loop halvings must be ≥ 0, got %d", o.Steps)
	case o.MaxOutstanding < 0:
		return fmt.Errorf("sweep: the open-loop outstanding cap must be ≥ 0, got %d", o.MaxOutstanding)
	}
	if o.Warmup == 0 {
		o.Warmup = DefaultOpenLoopWarmup
	}
	if o.Steady == 0 {
		o.Steady = DefaultOpenLoopSteady
	}
	if o.Tick == 0 {
		o.Tick = DefaultOpenLoopTick
	}
	if o.SLOWindow == 0 {
		o.SLOWindow = knee.DefaultSLOWindow
	}
	if o.Low == 0 {
		o.Low = DefaultOpenLoopLow
	}
	if o.Steps == 0 {
		o.Steps = DefaultOpenLoopSteps
	}
	return nil
}
