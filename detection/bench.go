package detection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Options configure a bench run. The zero value of a field means its default.
type Options struct {
	// Scenarios to run; nil means Scenarios().
	Scenarios []Scenario
	// ScrapeInterval is how often Prometheus scrapes the replica, DCGM and
	// kneewatch, and how often kneewatch evaluates (default 5s).
	ScrapeInterval time.Duration
	// EvalInterval is Prometheus's rule evaluation interval (default 15s).
	EvalInterval time.Duration
	// Window is kneewatch's evaluation window, also the window of the true
	// load (default 1m, kneewatch's default).
	Window time.Duration
	// SLOWindow is the window of the ground-truth SLO percentiles (default 2m).
	SLOWindow time.Duration
	// PageVariants are what-ifs: kneewatch's page generated with other
	// thresholds, scored beside the shipped defaults.
	PageVariants []PageVariant
	// ClosedLoopWhatIf also runs a second kneewatch on the same scrapes,
	// given the closed-loop knee of the same sweep instead of the Poisson
	// one (see kneeFinder.profile).
	ClosedLoopWhatIf bool
	// Seed makes the run reproducible (default 1).
	Seed   uint64
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Scenarios == nil {
		o.Scenarios = Scenarios()
	}
	if o.ScrapeInterval <= 0 {
		o.ScrapeInterval = 5 * time.Second
	}
	if o.EvalInterval <= 0 {
		o.EvalInterval = 15 * time.Second
	}
	if o.Window <= 0 {
		o.Window = time.Minute
	}
	if o.SLOWindow <= 0 {
		o.SLOWindow = 2 * time.Minute
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Report is a whole bench run.
type Report struct {
	Options Options
	Results []*ScenarioResult
	Elapsed time.Duration
	// OtherSeeds are the same scenarios run with other seeds, shown in
	// the report's robustness table; set by the caller.
	OtherSeeds []*Report
}

// Run runs every scenario in order and scores every detector in each.
func Run(ctx context.Context, o Options) (*Report, error) {
	o = o.withDefaults()
	if o.Window%o.ScrapeInterval != 0 {
		return nil, fmt.Errorf("the window %s must be a multiple of the scrape interval %s", o.Window, o.ScrapeInterval)
	}
	if len(o.Scenarios) == 0 {
		return nil, errors.New("no scenarios to run")
	}
	started := time.Now()
	engine := newEngine()
	defer engine.Close()
	knees := newKneeFinder(o)
	rep := &Report{Options: o}
	for i := range o.Scenarios {
		sc := &o.Scenarios[i]
		o.Logger.Info("running scenario", "id", sc.ID, "name", sc.Name)
		res, err := runScenario(ctx, sc, o, knees, engine)
		if err != nil {
			return nil, err
		}
		o.Logger.Info("scenario done", "name", sc.Name, "requests", res.Requests, "breaches", len(res.Breaches),
			"elapsed", res.Elapsed.Round(time.Millisecond))
		rep.Results = append(rep.Results, res)
	}
	rep.Elapsed = time.Since(started)
	return rep, nil
}
