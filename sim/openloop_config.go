package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// OpenLoopConfig shapes the Poisson knee search and each of its trials. A
// zero field takes its default.
type OpenLoopConfig struct {
	// Warmup is run before the steady part is judged, so the queue and the
	// KV cache reach their steady state (default 5m).
	Warmup time.Duration
	// Steady is the judged part of a trial (default 20m): long enough for
	// Poisson bunching to show its bad minutes, as a day of traffic would.
	Steady time.Duration
	// Tick is how often the windowed SLO is judged during the steady part
	// (default 5s, a scrape interval).
	Tick time.Duration
	// SLOWindow is the width of the windowed SLO percentiles (default
	// knee.DefaultSLOWindow).
	SLOWindow time.Duration
	// Low is the lowest load tried, as a multiple of the closed-loop knee's
	// request rate, in (0, 1) (default 0.2). It must keep the SLO.
	Low float64
	// Steps is how many times the bracket [Low, 1] is halved (default 6,
	// i.e. to within 0.8/64 = 1.25% of the closed-loop knee's rate).
	Steps int
}

// Defaults of OpenLoopConfig.
const (
	DefaultOpenLoopWarmup = 5 * time.Minute
	DefaultOpenLoopSteady = 20 * time.Minute
	DefaultOpenLoopTick   = 5 * time.Second
	DefaultOpenLoopLow    = 0.2
	DefaultOpenLoopSteps  = 6
)

// withDefaults validates c and fills its zero fields.
func (c OpenLoopConfig) withDefaults() (OpenLoopConfig, error) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"warmup", c.Warmup}, {"steady", c.Steady}, {"tick", c.Tick}, {"SLO window", c.SLOWindow}} {
		if d.v < 0 {
			return c, fmt.Errorf("open loop: %s must be ≥ 0 (0 = default), got %s", d.name, d.v)
		}
	}
	switch {
	case c.Low < 0 || c.Low >= 1 || math.IsNaN(c.Low):
		return c, fmt.Errorf("open loop: low must be in (0,1) as a multiple of the closed-loop knee's rate (0 = default %g), got %v", DefaultOpenLoopLow, c.Low)
	case c.Steps < 0:
		return c, fmt.Errorf("open loop: steps must be ≥ 0 (0 = default %d), got %d", DefaultOpenLoopSteps, c.Steps)
	}
	if c.Warmup == 0 {
		c.Warmup = DefaultOpenLoopWarmup
	}
	if c.Steady == 0 {
		c.Steady = DefaultOpenLoopSteady
	}
	if c.Tick == 0 {
		c.Tick = DefaultOpenLoopTick
	}
	if c.SLOWindow == 0 {
		c.SLOWindow = knee.DefaultSLOWindow
	}
	if c.Low == 0 {
		c.Low = DefaultOpenLoopLow
	}
	if c.Steps == 0 {
		c.Steps = DefaultOpenLoopSteps
	}
	if c.Tick > c.Steady {
		return c, fmt.Errorf("open loop: tick %s is longer than the steady part %s, so the SLO would never be judged", c.Tick, c.Steady)
	}
	return c, nil
}
