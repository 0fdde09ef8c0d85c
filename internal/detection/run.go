package detection

import (
	"context"
	"fmt"
	"math"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/rules"
)

// ScenarioResult is everything measured in one scenario.
type ScenarioResult struct {
	Scenario *Scenario
	// Profile is the knee profile kneewatch was given: the deployment's
	// true (Poisson) knee under nominal conditions (no slowdown, its own
	// mix), with the closed-loop curve of its sweep.
	Profile knee.Profile
	// KneeRate is the request rate Load = 1 stands for (the knee's Poisson
	// arrival rate).
	KneeRate float64
	Truth    []TruthPoint
	Breaches []Episode
	// Inferred is kneewatch's exported headroom at each scrape (NaN when
	// its evaluation was not ok), aligned with Truth, and Evaluations the
	// whole evaluation behind it.
	Inferred []float64
	// RequestsExported is kneewatch's kneewatch_replica_requests_total at
	// each scrape (NaN where it exported none): with Inferred, what the
	// page's sustained headroom is recorded from.
	RequestsExported []float64
	// KneeLoadExported is kneewatch's kneewatch_replica_knee_load_ratio
	// at each scrape, per dimension (NaN where it exported none), which
	// the sustained headroom averages.
	KneeLoadExported [knee.NumDimensions][]float64
	Evaluations      []knee.Result
	Headroom         HeadroomError
	// HeadroomErrors are the compared scrapes' errors behind Headroom, in
	// time order, for pooling over families and deployments.
	HeadroomErrors []float64
	// HeadroomCompared are the same scrapes' two headrooms, clamped as
	// compared, for the errors' direction (see directionOf).
	HeadroomCompared []ComparedHeadroom
	// UnknownTicks counts scrapes at which the truth could not judge the
	// SLO: the start of the run, before enough requests had finished.
	UnknownTicks int
	Scores       []DetectorScore
	// ClosedLoop is the closed-loop knee what-if, when Options.ClosedLoopWhatIf.
	ClosedLoop *WhatIfResult
	// Resweep is kneewatch given an independent sweep's profile, when
	// Options.ResweepSeed is set.
	Resweep *WhatIfResult
	// WithoutModels is kneewatch given the profile without its mix and
	// speed models, when Options.WithoutModelsWhatIf is set.
	WithoutModels *WhatIfResult
	// ProfileDrift are KneewatchKneeProfileDrift's firings, when
	// Options.ProfileDriftFirings is set.
	ProfileDrift []Firing
	Requests     int
	Steps        int
	Elapsed      time.Duration
}

// runScenario simulates one scenario, feeds every scrape through kneewatch
// and into a Prometheus store, evaluates every detector's rules over it, and
// scores them against the ground truth.
func runScenario(ctx context.Context, sc *Scenario, o Options, knees *kneeCache, resweepKnees []*kneeCache, engine *promql.Engine) (*ScenarioResult, error) {
	started := time.Now()
	if sc.Deployment.SLO == (knee.SLO{}) && sc.Deployment.Tightness != "" {
		slo, err := knees.slo(ctx, sc.Deployment)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		sc.Deployment.SLO = slo
	}
	if err := sc.validate(); err != nil {
		return nil, err
	}
	preset, err := sim.LoadPreset(sc.Deployment.Preset)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	prof, err := knees.profile(ctx, sc.Deployment, "", 0, 1)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	kneeRate := prof.Knee.RequestsPerSecond
	grid, err := knees.grid(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	groups, err := detectorRules(sc.Deployment, o.PageVariants, o.extraAlerts()...)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}

	res := &ScenarioResult{Scenario: sc, Profile: prof, KneeRate: kneeRate}
	st := newStore()
	engineJob := newScrapeTarget(st, "job", "vllm", "instance", replicaName+":8000", "replica", replicaName)
	dcgmJob := newScrapeTarget(st, "job", "dcgm-exporter", "instance", "bench-node:9400")
	kneewatchJob := newScrapeTarget(st, "job", "kneewatch", "instance", "kneewatch:9090")
	pipe, err := newPipeline(&prof, prof.Metadata.Name, o.ScrapeInterval, o.Window)
	if err != nil {
		return nil, err
	}
	vllm := newVLLMMetrics(preset)
	dcgm := newDCGMMetrics(preset, replicaName)
	whatIf, err := newClosedLoopWhatIf(sc, o, engine, &prof)
	if err != nil {
		return nil, err
	}
	resweep, err := newResweepWhatIf(ctx, sc, o, engine, resweepKnees)
	if err != nil {
		return nil, err
	}
	withoutModels, err := newWithoutModelsWhatIf(sc, o, engine, &prof)
	if err != nil {
		return nil, err
	}

	truthCfg := truthConfig{slo: sc.Deployment.SLO, interval: o.ScrapeInterval,
		loadWindow: o.Window, sloWindow: o.SLOWindow, grid: grid}
	orc := newOracle()
	scrape := func(ticks []tickTruth) error {
		at := ticks[len(ticks)-1].at
		engineFams, err := scrapeRegistry(vllm.reg)
		if err != nil {
			return fmt.Errorf("scraping the replica: %w", err)
		}
		dcgmFams, err := scrapeRegistry(dcgm.reg)
		if err != nil {
			return fmt.Errorf("scraping DCGM: %w", err)
		}
		round, kwFams, err := pipe.evaluate(at, engineFams, dcgmFams)
		if err != nil {
			return err
		}
		headroom := knee.Unknown()
		if r := round.Replicas[0].Result; r.OK {
			headroom = r.Headroom
		}
		res.Inferred = append(res.Inferred, headroom)
		res.RequestsExported = append(res.RequestsExported, counterValue(kwFams, catalog.MetricReplicaRequests.Name))
		ratios := gaugesByDimension(kwFams, catalog.MetricReplicaKneeLoad.Name)
		for d := range res.KneeLoadExported {
			res.KneeLoadExported[d] = append(res.KneeLoadExported[d], ratios[d])
		}
		res.Evaluations = append(res.Evaluations, round.Replicas[0].Result)
		for _, w := range []*profileWhatIf{whatIf, resweep, withoutModels} {
			if w == nil {
				continue
			}
			if err := w.scrape(at, engineFams, dcgmFams); err != nil {
				return err
			}
		}
		_, _, trueHeadroomNow := trueHeadroom(ticks, len(ticks)-1, truthCfg)
		if err := orc.scrape(at, kwFams, trueHeadroomNow); err != nil {
			return err
		}
		for _, job := range []struct {
			t    *scrapeTarget
			fams map[string]*dto.MetricFamily
		}{{engineJob, engineFams}, {dcgmJob, dcgmFams}, {kneewatchJob, kwFams}} {
			if err := job.t.ingest(at, job.fams); err != nil {
				return err
			}
		}
		return nil
	}
	tr, err := drive(ctx, driveConfig{scenario: sc, preset: preset, kneeRate: kneeRate, seed: sc.runSeed(o.Seed),
		interval: o.ScrapeInterval, vllm: vllm, dcgm: dcgm, scrape: scrape})
	if err != nil {
		return nil, err
	}
	res.Requests, res.Steps = tr.requests, tr.steps

	eval, err := newRuleEvaluator(engine, st, groups)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if err := eval.evalEvery(ctx, o.EvalInterval, sc.Duration); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	res.ProfileDrift = eval.firings(rules.AlertKneeProfileDrift)

	res.Truth = groundTruth(tr, truthCfg)
	for _, p := range res.Truth {
		if p.Unknown {
			res.UnknownTicks++
		}
	}
	res.Breaches = breachEpisodes(res.Truth)
	res.HeadroomErrors = headroomErrors(res.Inferred, res.Truth, int(o.Window/o.ScrapeInterval))
	res.HeadroomCompared = comparedHeadrooms(res.Inferred, res.Truth, int(o.Window/o.ScrapeInterval))
	res.Headroom = headroomError(res.Inferred, res.Truth, int(o.Window/o.ScrapeInterval))
	detectors := Detectors()
	for _, v := range o.PageVariants {
		detectors = append(detectors, variantDetector(v))
	}
	res.Scores = eval.scores(detectors, res.Breaches, sc.Duration)
	oracleScores, err := orc.score(ctx, engine, o.EvalInterval, sc.Duration, res.Breaches, o.PageVariants)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	res.Scores = append(res.Scores, oracleScores...)
	if whatIf != nil {
		if res.ClosedLoop, err = whatIf.finish(ctx, res, o); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
	}
	if resweep != nil {
		if res.Resweep, err = resweep.finish(ctx, res, o); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		// Its page is scored beside the others, under a name of its own.
		for _, s := range res.Resweep.Scores {
			if s.Detector.Key == DetectorKneewatchPage {
				s.Detector = resweepDetector(s.Detector, o)
				res.Scores = append(res.Scores, s)
			}
		}
	}
	if withoutModels != nil {
		if res.WithoutModels, err = withoutModels.finish(ctx, res, o); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		for _, s := range res.WithoutModels.Scores {
			if s.Detector.Key == DetectorKneewatchPage {
				s.Detector = withoutModelsDetector(s.Detector)
				res.Scores = append(res.Scores, s)
			}
		}
	}
	res.Elapsed = time.Since(started)
	return res, nil
}

// gaugesByDimension is the first replica's value of a gauge family per
// dimension label, NaN for a dimension it does not carry.
func gaugesByDimension(fams map[string]*dto.MetricFamily, name string) knee.Ratios {
	var out knee.Ratios
	for d := range out {
		out[d] = math.NaN()
	}
	f := fams[name]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() != "dimension" {
				continue
			}
			for d := range out {
				if knee.Dimension(d).String() == l.GetValue() {
					out[d] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

// counterValue is the first sample of a counter family, NaN when there is
// none.
func counterValue(fams map[string]*dto.MetricFamily, name string) float64 {
	if f := fams[name]; f != nil && len(f.GetMetric()) > 0 {
		return f.GetMetric()[0].GetCounter().GetValue()
	}
	return math.NaN()
}
