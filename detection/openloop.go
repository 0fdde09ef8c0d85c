package detection

import (
	"context"
	"fmt"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/sim"
)

// OpenLoopKnee is a deployment's knee measured the way its traffic arrives:
// the largest steady Poisson load that kept every windowed SLO percentile
// within its threshold over a long steady run, and the mean in-flight
// requests at that load. sim.FindKnee measures with a fixed number of
// clients, each sending when its previous request ends (as vllm bench's
// --max-concurrency does); this is the knee such a sweep would find with
// open-loop arrivals instead.
type OpenLoopKnee struct {
	// Load is a multiple of the closed-loop knee's request rate.
	Load float64
	// InFlight is the mean running + waiting requests at Load.
	InFlight float64
	// ClosedRate is the closed-loop knee's request rate under the same
	// conditions (Load's unit).
	ClosedRate float64
}

// Open-loop knee search: each trial runs a steady load for openLoopWarmup,
// then must keep the SLO at every scrape of openLoopSteady; the load is
// bisected between openLoopLow and 1 to openLoopSteps halvings.
const (
	openLoopWarmup = 5 * time.Minute
	openLoopSteady = 20 * time.Minute
	openLoopLow    = 0.2
	openLoopSteps  = 6
)

// openLoopKnee finds the open-loop knee of dep's replica when a share of
// its traffic comes from alt and its GPU is slowed down by slowdown,
// remembering it per set of conditions. Load is bisected as a multiple of
// the closed-loop knee's request rate under the same conditions; the result
// is returned as a multiple of rateUnit requests per second.
func (k *kneeFinder) openLoopKnee(ctx context.Context, dep Deployment, alt string, share, slowdown float64, o Options) (OpenLoopKnee, error) {
	if alt == "" || share <= 0 {
		alt, share = "", 0
	}
	key := kneeKey{preset: dep.Preset, workload: dep.Workload, alt: alt, share: share, slowdown: slowdown, slo: dep.SLO}
	if ok, found := k.open[key]; found {
		return ok, nil
	}
	closed, err := k.profile(ctx, dep, alt, share, slowdown)
	if err != nil {
		return OpenLoopKnee{}, err
	}
	closedRate, err := kneeRequestRate(&closed)
	if err != nil {
		return OpenLoopKnee{}, err
	}
	preset, err := sim.LoadPreset(dep.Preset)
	if err != nil {
		return OpenLoopKnee{}, err
	}
	trial := func(load float64) (kept bool, inFlight float64, err error) {
		sc := &Scenario{Name: fmt.Sprintf("open-loop knee of %s at %.3f×", dep.Workload, load), Deployment: dep,
			Duration: openLoopWarmup + openLoopSteady, Load: constant(load)}
		if alt != "" {
			sc.AltWorkload, sc.AltShare = alt, constant(share)
		}
		if slowdown != 1 {
			sc.Slowdown, sc.SlowdownMax = constant(slowdown), slowdown
		}
		tr, err := drive(ctx, driveConfig{scenario: sc, preset: preset, kneeRate: closedRate, seed: o.Seed, interval: o.ScrapeInterval,
			vllm: newVLLMMetrics(preset), dcgm: newDCGMMetrics(preset, replicaName), scrape: func(time.Time) error { return nil }})
		if err != nil {
			return false, 0, err
		}
		grid := &kneeGrid{shares: []float64{0}, slowdowns: []float64{1}, knees: [][]float64{{closed.Knee.Concurrency}}}
		truth := groundTruth(tr, truthConfig{slo: dep.SLO, interval: o.ScrapeInterval, loadWindow: o.Window, sloWindow: o.SLOWindow, grid: grid})
		warm := int(openLoopWarmup / o.ScrapeInterval)
		for _, p := range truth[warm:] {
			if p.Breached {
				return false, 0, nil
			}
		}
		area := tr.ticks[len(tr.ticks)-1].inflightArea - tr.ticks[warm-1].inflightArea
		return true, area / openLoopSteady.Seconds(), nil
	}
	lo, hi := openLoopLow, 1.0
	best := OpenLoopKnee{ClosedRate: closedRate}
	kept, inFlight, err := trial(lo)
	if err != nil {
		return best, err
	}
	if !kept {
		return best, fmt.Errorf("the SLO of %s breaks under Poisson traffic even at %.1f× the knee rate", dep.Workload, lo)
	}
	best.Load, best.InFlight = lo, inFlight
	if kept, inFlight, err = trial(hi); err != nil {
		return best, err
	} else if kept {
		best.Load, best.InFlight = hi, inFlight
		lo = hi
	}
	for i := 0; i < openLoopSteps && lo < hi; i++ {
		mid := (lo + hi) / 2
		kept, inFlight, err := trial(mid)
		if err != nil {
			return best, err
		}
		if kept {
			lo, best.Load, best.InFlight = mid, mid, inFlight
		} else {
			hi = mid
		}
	}
	k.open[key] = best
	return best, nil
}

// openLoopProfile is p with its knee moved to the open-loop one: the same
// measured curve, read at the open-loop knee's in-flight load.
func openLoopProfile(p knee.Profile, ok OpenLoopKnee) (knee.Profile, error) {
	at, found := p.CurveAt(ok.InFlight)
	if !found || !(ok.InFlight > 0) {
		return knee.Profile{}, fmt.Errorf("profile %s has no curve at %.1f in flight", p.Metadata.Name, ok.InFlight)
	}
	q := p
	q.Metadata.Name += "-open-loop"
	q.Knee.Concurrency = ok.InFlight
	q.Knee.OutputTokensPerSecond = at.OutputTokensPerSecond
	q.Knee.GoodputTokensPerSecond = at.GoodputTokensPerSecond
	q.Knee.KVCacheUsage = at.KVCacheUsage
	return q, nil
}

// OpenLoopResult is the what-if of one scenario: kneewatch given a profile
// whose knee is the open-loop one, fed the same scrapes.
type OpenLoopResult struct {
	Knee    OpenLoopKnee
	Profile knee.Profile
	// Scores are kneewatch's page and warning evaluated over the what-if's
	// exported series.
	Scores []DetectorScore
	// Inferred and Headroom compare its headroom with the closed-loop truth.
	Inferred []float64
	Headroom HeadroomError
}

// openLoopWhatIf is the second kneewatch of a scenario, given the
// open-loop knee, with its own Prometheus store.
type openLoopWhatIf struct {
	result *OpenLoopResult
	pipe   *pipeline
	store  *store
	job    *scrapeTarget
	engine *promql.Engine
}

// newOpenLoopWhatIf measures the open-loop knee of sc's deployment and sets
// up the second kneewatch; nil when the what-if is off.
func newOpenLoopWhatIf(ctx context.Context, sc *Scenario, o Options, knees *kneeFinder, engine *promql.Engine, prof *knee.Profile, kneeRate float64) (*openLoopWhatIf, error) {
	if !o.OpenLoopWhatIf {
		return nil, nil
	}
	ok, err := knees.openLoopKnee(ctx, sc.Deployment, "", 0, 1, o)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	p, err := openLoopProfile(*prof, ok)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	w := &openLoopWhatIf{result: &OpenLoopResult{Knee: ok, Profile: p}, store: newStore(), engine: engine}
	if w.pipe, err = newPipeline(&w.result.Profile, p.Metadata.Name, o.ScrapeInterval, o.Window); err != nil {
		return nil, err
	}
	w.job = newScrapeTarget(w.store, "job", "kneewatch", "instance", "kneewatch:9090")
	return w, nil
}

// scrape feeds the what-if kneewatch the scrapes the real one got.
func (w *openLoopWhatIf) scrape(at time.Time, engine, dcgm map[string]*dto.MetricFamily) error {
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
func (w *openLoopWhatIf) finish(ctx context.Context, res *ScenarioResult, o Options) (*OpenLoopResult, error) {
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
