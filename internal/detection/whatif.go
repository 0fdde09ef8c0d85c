package detection

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
	"github.com/kneewatch/kneewatch/rules"
	"github.com/kneewatch/kneewatch/sweep"
)

// WhatIfResult is a what-if of one scenario: a second kneewatch, given
// another profile of the same deployment, fed the same scrapes and judged
// against the same truth.
type WhatIfResult struct {
	Profile knee.Profile
	// Scores are kneewatch's page and warning evaluated over the what-if's
	// exported series.
	Scores []DetectorScore
	// ProfileDrift are KneewatchKneeProfileDrift's firings over the
	// what-if's series, when Options.ProfileDriftFirings is set.
	ProfileDrift []Firing
	// Inferred and Headroom compare its headroom with the truth; Errors
	// are the compared scrapes' errors, for pooling over scenarios.
	Inferred []float64
	Headroom HeadroomError
	Errors   []float64
}

// profileWhatIf is the second kneewatch of a scenario, with its own
// Prometheus store.
type profileWhatIf struct {
	result *WhatIfResult
	pipe   *pipeline
	store  *store
	job    *scrapeTarget
	engine *promql.Engine
}

// newClosedLoopWhatIf is kneewatch given the closed-loop knee of the same
// sweep (what vllm bench --max-concurrency or a closed-loop `kneewatch
// sweep` reports); nil when Options.ClosedLoopWhatIf is off.
func newClosedLoopWhatIf(sc *Scenario, o Options, engine *promql.Engine, prof *knee.Profile) (*profileWhatIf, error) {
	if !o.ClosedLoopWhatIf {
		return nil, nil
	}
	p, err := withClosedLoopKnee(*prof)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	return newProfileWhatIf(p, o, engine)
}

// newResweepWhatIf is kneewatch given the profile an operator's own sweep
// would give: the deployment's nominal Poisson knee and mix model measured
// again with Options.ResweepSeed, independently of the one the truth and
// the bench's kneewatch share. nil when the option is off.
// With Options.ResweepAverageSeeds, the knee's concurrency and rates are
// the mean over every sweep's, or with Options.ResweepMedian the median
// sweep's profile.
func newResweepWhatIf(ctx context.Context, sc *Scenario, o Options, engine *promql.Engine, resweep []*kneeCache) (*profileWhatIf, error) {
	if len(resweep) == 0 {
		return nil, nil
	}
	var p knee.Profile
	var sum knee.Knee
	var all []knee.Profile
	for i, kc := range resweep {
		q, err := kc.profile(ctx, sc.Deployment, "", 0, 1)
		if errors.Is(err, sim.ErrSLOUnreachable) || errors.Is(err, sim.ErrOpenLoopSLOUnreachable) {
			// That sweep found no knee (its low rate broke the SLO): an
			// operator would have no profile to give kneewatch, so there
			// is no what-if to run; the report counts the scenarios left
			// without.
			o.Logger.Warn("the resweep what-if found no knee; the scenario runs without it", "scenario", sc.Name, "seed", kc.opts.Seed, "err", err)
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("scenario %s: the sweep at seed %d: %w", sc.Name, kc.opts.Seed, err)
		}
		if i == 0 {
			p = q
		}
		all = append(all, q)
		sum.Concurrency += q.Knee.Concurrency
		sum.RequestsPerSecond += q.Knee.RequestsPerSecond
		sum.OutputTokensPerSecond += q.Knee.OutputTokensPerSecond
		sum.GoodputTokensPerSecond += q.Knee.GoodputTokensPerSecond
	}
	if o.ResweepMedian && len(all) > 1 {
		slices.SortStableFunc(all, func(a, b knee.Profile) int { return cmp.Compare(a.Knee.RequestsPerSecond, b.Knee.RequestsPerSecond) })
		p = all[(len(all)-1)/2]
	} else if n := float64(len(resweep)); n > 1 {
		fc, fr := sum.Concurrency/n/p.Knee.Concurrency, sum.RequestsPerSecond/n/p.Knee.RequestsPerSecond
		p.Knee.Concurrency = sum.Concurrency / n
		p.Knee.RequestsPerSecond = sum.RequestsPerSecond / n
		p.Knee.OutputTokensPerSecond = sum.OutputTokensPerSecond / n
		p.Knee.GoodputTokensPerSecond = sum.GoodputTokensPerSecond / n
		if m := p.MixModel; m != nil {
			// The mix model is anchored at the first sweep's knee; moved
			// with it, it keeps its shape (a copy: the cached profile's
			// model is shared).
			mm := *m
			mm.Points = slices.Clone(m.Points)
			for i := range mm.Points {
				mm.Points[i].Concurrency *= fc
				mm.Points[i].RequestsPerSecond *= fr
			}
			mm.Concurrency.AtProfileMix *= fc
			mm.RequestsPerSecond.AtProfileMix *= fr
			p.MixModel = &mm
		}
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("scenario %s: the averaged resweep profile: %w", sc.Name, err)
		}
	}
	p.Metadata.Name += "-resweep"
	return newProfileWhatIf(p, o, engine)
}

// newWithoutModelsWhatIf is kneewatch given the deployment's profile as
// `kneewatch sweep` writes it by default; nil when
// Options.WithoutModelsWhatIf is off. It has no mix and no speed model:
// kneewatch then does not move the knee with the mix (the KV cache, read
// against the knee's own usage, sees longer contexts), and reads a slower
// GPU's knee off the profile's curve. A poisson profile's curve is also cut
// to the doubling a default sweep measures (asDoublingSweep).
func newWithoutModelsWhatIf(sc *Scenario, o Options, engine *promql.Engine, prof *knee.Profile) (*profileWhatIf, error) {
	if !o.WithoutModelsWhatIf {
		return nil, nil
	}
	p := *prof
	if p.Knee.Arrivals == knee.ArrivalsPoisson {
		var err error
		if p, err = asDoublingSweep(p); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
	}
	full := p.MixModel
	p.MixModel, p.SpeedModel = nil, nil
	if len(o.WithoutModelsMixScales) > 0 && full != nil {
		p.MixModel = mixModelAt(full, o.WithoutModelsMixScales, p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens)
	}
	p.Metadata.Name += "-without-models"
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: the profile without models: %w", sc.Name, err)
	}
	return newProfileWhatIf(p, o, engine)
}

// mixModelAt is the mix model fitted to full's knees at the profile's own
// mix and the given scales only, as a sweep with those scales fits it;
// nil where they fit none.
func mixModelAt(full *knee.MixModel, scales []knee.MixScale, p0, o0 float64) *knee.MixModel {
	var points []knee.MixPoint
	for _, pt := range full.Points {
		s := knee.MixScale{Prompt: pt.PromptScale, Output: pt.OutputScale}
		if s == (knee.MixScale{Prompt: 1, Output: 1}) || slices.Contains(scales, s) {
			points = append(points, pt)
		}
	}
	points, _ = knee.LeaveOutRisingMixPoints(points)
	m, err := knee.FitMixModel(points, p0, o0)
	if err != nil {
		return nil
	}
	return &m
}

func newProfileWhatIf(p knee.Profile, o Options, engine *promql.Engine) (*profileWhatIf, error) {
	w := &profileWhatIf{result: &WhatIfResult{Profile: p}, store: newStore(), engine: engine}
	var err error
	if w.pipe, err = newPipeline(&w.result.Profile, p.Metadata.Name, o.ScrapeInterval, o.Window); err != nil {
		return nil, err
	}
	w.job = newScrapeTarget(w.store, "job", "kneewatch", "instance", "kneewatch:9090")
	return w, nil
}

// asDoublingSweep is a poisson profile as a sweep with Poisson arrivals
// measures its curve: the closed loop's doubling, stopped after its first
// break and sweep.DefaultBreakProbes refinement levels, with the
// closed-loop knee it records interpolated in the bracket left
// (measure.Search.StopAtBreak and Estimate, replayed on the profile's own
// points). A refinement level the profile did not measure is stood in for
// by its point nearest to it inside the bracket (none: the replay stops).
// The poisson knee itself stays.
func asDoublingSweep(p knee.Profile) (knee.Profile, error) {
	if p.SLO.Quantile != 0.99 || len(p.Points) == 0 {
		return knee.Profile{}, fmt.Errorf("profile %s: the doubling replay reads p99 margins on its points; its SLO quantile is %g, with %d points", p.Metadata.Name, p.SLO.Quantile, len(p.Points))
	}
	search, err := measure.NewSearch(math.MaxInt32, 0.1, 0)
	if err != nil {
		return knee.Profile{}, err
	}
	search.StopAtBreak = true
	search.BreakProbes = sweep.DefaultBreakProbes
	var points []knee.Point
	for {
		step, ok := search.Next()
		if !ok {
			break
		}
		pt, ok := knee.PointAt(p.Points, float64(step.Concurrency))
		if !ok && len(points) > 0 && step.Concurrency < int(points[len(points)-1].Concurrency) {
			// a refinement probe: the profile's nearest point strictly
			// inside the bracket stands in
			lo, hi := search.Bracket()
			best := -1.0
			for _, q := range p.Points {
				if q.Concurrency > float64(lo) && q.Concurrency < float64(hi) &&
					(best < 0 || math.Abs(q.Concurrency-float64(step.Concurrency)) < math.Abs(best-float64(step.Concurrency))) {
					best, pt = q.Concurrency, q
				}
			}
			if best < 0 {
				break
			}
			ok = true
		}
		if !ok {
			if step.Concurrency > int(p.Points[len(p.Points)-1].Concurrency) {
				break // the profile's own search stopped below: the cap
			}
			return knee.Profile{}, fmt.Errorf("profile %s has no point at concurrency %d for its doubling", p.Metadata.Name, step.Concurrency)
		}
		points = append(points, pt)
		margin := max(pt.TTFT.P99/p.SLO.TTFT.Seconds(), pt.TPOT.P99/p.SLO.TPOT.Seconds())
		search.Record(int(pt.Concurrency), measure.Outcome{Good: pt.MeetsSLO, Margin: margin, TokensPerSecond: pt.OutputTokensPerSecond})
	}
	q := p
	slices.SortFunc(points, func(a, b knee.Point) int { return cmp.Compare(a.Concurrency, b.Concurrency) })
	q.Points = points
	q.Sweep.Levels = nil
	for _, pt := range points {
		q.Sweep.Levels = append(q.Sweep.Levels, int(pt.Concurrency))
	}
	q.Knee.ClosedLoopConcurrency = math.Floor(search.Estimate())
	return q, q.Validate()
}

// withClosedLoopKnee is a Poisson-knee profile with its knee moved back to
// the closed-loop knee point of its sweep.
func withClosedLoopKnee(p knee.Profile) (knee.Profile, error) {
	pt, ok := knee.PointAt(p.Points, p.Knee.ClosedLoopConcurrency)
	if !ok {
		return knee.Profile{}, fmt.Errorf("profile %s has no point at its closed-loop knee %v", p.Metadata.Name, p.Knee.ClosedLoopConcurrency)
	}
	q := p
	q.Metadata.Name += "-closed-loop"
	q.Sweep.RateLevels = nil
	// The mix model is anchored at the Poisson knee it was measured with;
	// it does not describe a closed-loop one, and would fail validation.
	q.MixModel = nil
	q.Knee = knee.Knee{
		Concurrency:            pt.Concurrency,
		OutputTokensPerSecond:  pt.OutputTokensPerSecond,
		GoodputTokensPerSecond: pt.GoodputTokensPerSecond,
		KVCacheUsage:           pt.KVCacheUsage,
		LimitingResource:       p.Knee.LimitingResource,
		Arrivals:               knee.ArrivalsClosedLoop,
	}
	return q, q.Validate()
}

// scrape feeds the what-if kneewatch the scrapes the real one got.
func (w *profileWhatIf) scrape(at time.Time, engine, dcgm map[string]*dto.MetricFamily) error {
	round, fams, err := w.pipe.evaluate(at, engine, dcgm)
	if err != nil {
		return err
	}
	headroom := knee.Unknown()
	if r := round.Replicas[0].Result; r.OK {
		headroom = r.Headroom
	}
	w.result.Inferred = append(w.result.Inferred, headroom)
	return w.job.ingest(at, fams)
}

// finish evaluates kneewatch's shipped rules over the what-if's series and
// scores its page and warning against the run's breaches.
func (w *profileWhatIf) finish(ctx context.Context, res *ScenarioResult, o Options) (*WhatIfResult, error) {
	groups, err := shippedRules(o.extraAlerts()...)
	if err != nil {
		return nil, err
	}
	eval, err := newRuleEvaluator(w.engine, w.store, groups)
	if err != nil {
		return nil, err
	}
	if err := eval.evalEvery(ctx, o.EvalInterval, res.Scenario.Duration); err != nil {
		return nil, err
	}
	var ds []Detector
	for _, d := range Detectors() {
		if d.Key == DetectorKneewatchPage || d.Key == DetectorKneewatchWarning {
			ds = append(ds, d)
		}
	}
	w.result.Scores = eval.scores(ds, res.Breaches, res.Scenario.Duration)
	w.result.ProfileDrift = eval.firings(rules.AlertKneeProfileDrift)
	w.result.Headroom = headroomError(w.result.Inferred, res.Truth, int(o.Window/o.ScrapeInterval))
	w.result.Errors = headroomErrors(w.result.Inferred, res.Truth, int(o.Window/o.ScrapeInterval))
	return w.result, nil
}
