package detection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/rules"
)

// BenchTruthGridSeeds is Options.TruthGridSeeds of the bench's report
// (`make bench-detection`), and of the tune tool's runs unless told
// otherwise, so that a change judged on the tune half is judged against the
// truth the report's test half is. With one search, the true knee of an
// 8B/H100 RAG deployment with a tight SLO at 1.2× slower read 3.0 in flight
// on one seed and 4.5 and 4.6 on two others.
const BenchTruthGridSeeds = 3

// CollectGarbageLessOften sets the garbage collector's target to 400% (Go's
// default is 100%) unless GOGC is set, for cmd/kneewatch-bench and this
// package's tests. A bench run is a batch job on a machine with memory to
// spare, and its simulator and PromQL engine allocate steadily: at the
// default, the collector and its write barriers took about a tenth of the
// bench's CPU.
func CollectGarbageLessOften() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

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
	// ResweepSeed, when not 0, also runs a second kneewatch on the same
	// scrapes given the deployment's profile measured again with this seed:
	// the profile an operator's own sweep gives, whose knee differs from
	// the truth's by that measurement's noise. Its page is scored as
	// DetectorResweepPage.
	ResweepSeed uint64
	// ResweepAverageSeeds are more sweeps for the resweep what-if: its
	// profile is ResweepSeed's with the knee's concurrency and rates the
	// mean over that sweep and these, as an operator averaging several
	// sweeps would have.
	ResweepAverageSeeds []uint64
	// ResweepMedian takes, instead of that mean, the whole profile of the
	// sweep whose knee rate is the median of ResweepSeed's and
	// ResweepAverageSeeds' (the lower middle one for an even count), as
	// `kneewatch sweep --open-loop-searches` keeps the median search's
	// knee.
	ResweepMedian bool
	// ResweepLikeSweep runs the resweep's Poisson trials as `kneewatch
	// sweep` runs its own: a 1-minute warm-up, a steady part of 150
	// requests and at least 2 minutes, 4 halvings from 0.2 of the start,
	// judged at 90% of the thresholds with the runaway test
	// (sweep.OpenLoopConfig's defaults), rather than as the truth's are
	// (5-minute warm-ups, 20-minute steady parts at the thresholds): the
	// profile an operator's sweep writes. Its mix and speed models are
	// searched the same way.
	ResweepLikeSweep bool
	// sweepTrials makes this run's knee searches the sweep's (set on the
	// resweep's options when ResweepLikeSweep is).
	sweepTrials bool
	// WithoutModelsWhatIf also runs a second kneewatch on the same scrapes
	// given the deployment's profile as `kneewatch sweep` writes it by
	// default (without --mix-scales or --speed-model): no mix or speed
	// model, and a poisson profile's curve cut to the doubling
	// (asDoublingSweep). Its page is scored as DetectorWithoutModelsPage.
	WithoutModelsWhatIf bool
	// ProfileDriftFirings also evaluates KneewatchKneeProfileDrift, a
	// ticket and no detector, over kneewatch's series and each what-if's,
	// and records its firings (ScenarioResult.ProfileDrift).
	ProfileDriftFirings bool
	// WithoutModelsMixScales, when set, gives the without-models what-if a
	// mix model after all: fitted (knee.FitMixModel, after
	// knee.LeaveOutRisingMixPoints, as the sweep fits its own) to the
	// truth's knees at these scales of its mix and its own mix only, the
	// profile `kneewatch sweep --mix-scales` with them writes. Still no
	// speed model, and the curve cut to the doubling. Where the points fit
	// no model, the profile has none, as the sweep's would not.
	WithoutModelsMixScales []knee.MixScale
	// TruthGridSeeds is how many independent knee searches the truth's
	// knee under changed conditions (a share of another mix, a slower GPU;
	// see kneeCache.grid) is the median of (default 1). One Poisson search
	// is a noisy measure: over seeds 1, 2 and 3, the largest of a
	// deployment's knees in flight over the smallest, less 1, has a median
	// of 19% over the suite's 28 deployments (TestPoissonKneeSeedSpread).
	// At nominal conditions the truth keeps the one sweep kneewatch is
	// given. The bench's report uses BenchTruthGridSeeds.
	TruthGridSeeds int
	// Seed makes the run reproducible (default 1).
	Seed uint64
	// Workers is how many scenarios run at once (default: 2, or 1 on one
	// CPU). Results do not depend on it: every scenario has its own seed,
	// stores and kneewatch, and true knees are measured once per run.
	Workers int
	Logger  *slog.Logger
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
	if o.TruthGridSeeds <= 0 {
		o.TruthGridSeeds = 1
	}
	if o.Workers <= 0 {
		o.Workers = min(2, runtime.GOMAXPROCS(0))
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
	// Suite is a run of a generated suite half, reported first, and
	// SuiteHalf and SuiteSeed what it was; set by the caller.
	Suite     *Report
	SuiteHalf string
	SuiteSeed uint64
	// Wall is the whole command's wall time, when the caller measured it.
	Wall time.Duration
}

// Run runs every scenario, Workers at a time, and scores every detector in
// each; the results are in the order of the scenarios.
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
	knees := newKneeCache(o)
	var resweepKnees []*kneeCache
	if o.ResweepSeed != 0 {
		for _, seed := range append([]uint64{o.ResweepSeed}, o.ResweepAverageSeeds...) {
			if seed == o.Seed {
				return nil, fmt.Errorf("the resweep seed %d is the run's own: its profile would be the truth's", seed)
			}
			ro := o
			ro.Seed = seed
			ro.TruthGridSeeds = 1 // the what-if sweeps the nominal profile only, never a grid
			ro.sweepTrials = o.ResweepLikeSweep
			resweepKnees = append(resweepKnees, newKneeCache(ro))
		}
	}
	// Each scenario is run on a copy: a derived SLO is set on it.
	scenarios := slices.Clone(o.Scenarios)
	results := make([]*ScenarioResult, len(scenarios))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Go(func() {
			for i := range next {
				sc := &scenarios[i]
				o.Logger.Info("running scenario", "id", sc.ID, "name", sc.Name)
				res, err := runScenario(ctx, sc, o, knees, resweepKnees, engine)
				if err != nil {
					cancel(err)
					continue
				}
				o.Logger.Info("scenario done", "id", sc.ID, "name", sc.Name, "requests", res.Requests, "breaches", len(res.Breaches),
					"elapsed", res.Elapsed.Round(time.Millisecond))
				results[i] = res
			}
		})
	}
feed:
	for i := range scenarios {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	rep := &Report{Options: o, Results: results, Elapsed: time.Since(started)}
	return rep, nil
}

// extraAlerts are the shipped alerts evaluated beside the detectors' (see
// ProfileDriftFirings).
func (o Options) extraAlerts() []string {
	if o.ProfileDriftFirings {
		return []string{rules.AlertKneeProfileDrift}
	}
	return nil
}
