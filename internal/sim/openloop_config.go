package sim

import (
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// OpenLoopConfig shapes the simulator's Poisson knee search and each of
// its trials: knee.PoissonSearch's settings, under the simulator's own
// defaults (warmup 5m and steady 20m, as a day of traffic would show
// Poisson bunching; tick 5s, a scrape interval; SLO window
// knee.DefaultSLOWindow; low 0.2; 6 halvings, i.e. to within 0.8/64 = 1.25%
// of the closed-loop knee's rate). A zero field takes its default. It is a
// type of its own, not an alias, so it can carry withDefaults.
type OpenLoopConfig knee.PoissonSearch

// Defaults of OpenLoopConfig.
const (
	DefaultOpenLoopWarmup = 5 * time.Minute
	DefaultOpenLoopSteady = 20 * time.Minute
	DefaultOpenLoopTick   = 5 * time.Second
	DefaultOpenLoopLow    = 0.2
	DefaultOpenLoopSteps  = 6
)

// withDefaults fills c's zero fields and validates the result.
func (c OpenLoopConfig) withDefaults() (OpenLoopConfig, error) {
	s, err := knee.PoissonSearch(c).WithDefaults(knee.PoissonSearch{
		Warmup: DefaultOpenLoopWarmup, Steady: DefaultOpenLoopSteady, Tick: DefaultOpenLoopTick,
		SLOWindow: knee.DefaultSLOWindow, Low: DefaultOpenLoopLow, Steps: DefaultOpenLoopSteps,
	})
	return OpenLoopConfig(s), err
}
