package detection

import (
	"context"
	"fmt"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql"

	"github.com/kneewatch/kneewatch/knee"
)

// ClosedLoopResult is the what-if of one scenario: kneewatch given the
// closed-loop knee of the same sweep (what vllm bench --max-concurrency or
// a closed-loop `kneewatch sweep` reports), fed the same scrapes.
type ClosedLoopResult struct {
	Profile knee.Profile
	// Scores are kneewatch's page and warning evaluated over the what-if's
	// exported series.
	Scores []DetectorScore
	// Inferred and Headroom compare its headroom with the truth.
	Inferred []float64
	Headroom HeadroomError
}

// closedLoopWhatIf is the second kneewatch of a scenario, with its own
// Prometheus store.
type closedLoopWhatIf struct {
	result *ClosedLoopResult
	pipe   *pipeline
	store  *store
	job    *scrapeTarget
	engine *promql.Engine
}

// newClosedLoopWhatIf sets up the second kneewatch; nil when the what-if
// is off.
func newClosedLoopWhatIf(sc *Scenario, o Options, engine *promql.Engine, prof *knee.Profile) (*closedLoopWhatIf, error) {
	if !o.ClosedLoopWhatIf {
		return nil, nil
	}
	p, err := withClosedLoopKnee(*prof)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	w := &closedLoopWhatIf{result: &ClosedLoopResult{Profile: p}, store: newStore(), engine: engine}
	if w.pipe, err = newPipeline(&w.result.Profile, p.Metadata.Name, o.ScrapeInterval, o.Window); err != nil {
		return nil, err
	}
	w.job = newScrapeTarget(w.store, "job", "kneewatch", "instance", "kneewatch:9090")
	return w, nil
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
func (w *closedLoopWhatIf) scrape(at time.Time, engine, dcgm map[string]*dto.MetricFamily) error {
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
func (w *closedLoopWhatIf) finish(ctx context.Context, res *ScenarioResult, o Options) (*ClosedLoopResult, error) {
	groups, err := shippedRules()
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
	w.result.Headroom = headroomError(w.result.Inferred, res.Truth, int(o.Window/o.ScrapeInterval))
	return w.result, nil
}
