package detection

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
	"github.com/kneewatch/kneewatch/sweep"
	"github.com/kneewatch/kneewatch/workload"
)

// kneeKey is one set of conditions a true knee is measured under.
type kneeKey struct {
	preset, workload, alt string
	share, slowdown       float64
	slo                   knee.SLO
}

// kneeFinder measures true knees with sim.FindKnee in virtual time and
// remembers them, so scenarios sharing a deployment and conditions measure
// each knee once.
type kneeFinder struct {
	cache map[kneeKey]knee.Profile
	opts  Options
}

func newKneeFinder(o Options) *kneeFinder {
	return &kneeFinder{cache: map[kneeKey]knee.Profile{}, opts: o}
}

// blendRecords is how many requests a blended mix's trace holds: enough that
// every closed-loop level (≥ 1000 window requests) cycles through a sample
// whose share of the alternative mix is within a few percent of the target.
const blendRecords = 8000

// Poisson knee search settings (sim.OpenLoopConfig): a trial runs a steady
// load for poissonWarmup, then must keep the SLO at every scrape of
// poissonSteady; the load is bisected between poissonLow and 1 × the
// closed-loop knee's rate to poissonSteps halvings.
const (
	poissonWarmup = 5 * time.Minute
	poissonSteady = 20 * time.Minute
	poissonLow    = 0.1
	poissonSteps  = 7
)

// poissonSearch is the bench's Poisson knee search (the settings above),
// judged at o's scrape interval over its SLO window, and what its trials
// are held to beyond that window: nothing for the truth's; for a search
// run as `kneewatch sweep` runs its own (Options.ResweepLikeSweep), the
// sweep's trials (sweep.OpenLoopConfig's defaults), their steady parts
// sized to hold 150 requests as the simulator's trials always are.
func poissonSearch(o Options) (sim.OpenLoopConfig, sim.TrialVerdict) {
	if o.sweepTrials {
		return sim.OpenLoopConfig{Warmup: sweep.DefaultOpenLoopWarmup, Steady: sweep.DefaultOpenLoopSteady, Tick: o.ScrapeInterval,
				SLOWindow: o.SLOWindow, Low: sweep.DefaultOpenLoopLow, Steps: sweep.DefaultOpenLoopSteps},
			sim.TrialVerdict{ThresholdShare: sweep.DefaultThresholdShare, Runaway: measure.DefaultRunaway}
	}
	return sim.OpenLoopConfig{Warmup: poissonWarmup, Steady: poissonSteady, Tick: o.ScrapeInterval,
		SLOWindow: o.SLOWindow, Low: poissonLow, Steps: poissonSteps}, sim.TrialVerdict{}
}

// profile is the true knee profile of dep's replica when a share of its
// traffic comes from alt and its GPU is slowed down by slowdown: the knee
// measured the way its traffic arrives, with steady Poisson arrivals
// (sim.FindKnee with knee.ArrivalsPoisson, as `kneewatch sim knee
// --arrivals poisson` runs it). It is the largest load that kept every
// windowed SLO percentile within its threshold, judged as the bench judges
// breaches, over a long steady run, and its concurrency the mean in-flight
// requests at that load. A closed-loop knee (a fixed number of clients,
// each sending when its previous request ends, as vllm bench's
// --max-concurrency does) overstates it: those clients pace themselves by
// the replica, so prefills never bunch up and the queue never grows. The
// curve (points) stays the closed-loop one, which kneewatch reads
// throughput on.
func (k *kneeFinder) profile(ctx context.Context, dep Deployment, alt string, share, slowdown float64) (knee.Profile, error) {
	if alt == "" || share <= 0 {
		alt, share = "", 0
	}
	key := kneeKey{preset: dep.Preset, workload: dep.Workload, alt: alt, share: share, slowdown: slowdown, slo: dep.SLO}
	if p, ok := k.cache[key]; ok {
		return p, nil
	}
	preset, err := sim.LoadPreset(dep.Preset)
	if err != nil {
		return knee.Profile{}, err
	}
	gen, err := blendGenerator(dep.Workload, alt, share, k.opts.Seed)
	if err != nil {
		return knee.Profile{}, err
	}
	// The deployment's nominal profile, the one kneewatch is given, carries
	// the mix model an operator gets from `kneewatch sim knee --mix-scales
	// default`: kneewatch moves its knee when the mix shifts; and the speed
	// model of `--speed-model default`: it moves its knee for a slower GPU. The knees at
	// the scaled mixes are measured inside this search, once per
	// deployment, and cached with the profile.
	var mixScales []knee.MixScale
	var speeds []float64
	if alt == "" && slowdown == 1 {
		mixScales = knee.DefaultMixScales
		speeds = knee.DefaultSpeeds
	}
	openLoop, verdict := poissonSearch(k.opts)
	p, err := sim.FindKnee(ctx, sim.KneeConfig{
		Engine:   sim.Config{Preset: preset, Slowdown: slowdown},
		Workload: gen,
		SLO:      dep.SLO,
		Seed:     k.opts.Seed,
		// The chat knee sits at about half of max_num_seqs; sweeping up to
		// it leaves room to see the flattening.
		MaxConcurrency:  preset.MaxNumSeqs,
		Arrivals:        knee.ArrivalsPoisson,
		OpenLoop:        openLoop,
		OpenLoopVerdict: verdict,
		MixScales:       mixScales,
		Speeds:          speeds,
	})
	if errors.Is(err, sim.ErrMixModel) {
		// Too few scaled mixes had a knee (the SLO breaks at one request of
		// the heavier ones): kneewatch gets the profile without a mix
		// model, as before it existed.
		err = nil
	}
	if err != nil {
		return knee.Profile{}, fmt.Errorf("true knee of %s/%s (%.0f%% %s, slowdown %.2f): %w", dep.Preset, dep.Workload, 100*share, alt, slowdown, err)
	}
	k.cache[key] = p
	return p, nil
}

// blendGenerator draws from the named mix, or, with a share of another mix,
// replays a fixed seeded sample of the blend (the workload package's
// generators draw from one mix; a trace of the blend is one).
func blendGenerator(primary, alt string, share float64, seed uint64) (*workload.Generator, error) {
	pm, ok := workload.Preset(primary)
	if !ok {
		return nil, fmt.Errorf("unknown workload %q (known: %v)", primary, workload.PresetNames())
	}
	if alt == "" || share <= 0 {
		return workload.NewMixGenerator(pm, primary, seed)
	}
	am, ok := workload.Preset(alt)
	if !ok {
		return nil, fmt.Errorf("unknown workload %q (known: %v)", alt, workload.PresetNames())
	}
	if share >= 1 {
		return workload.NewMixGenerator(am, alt, seed)
	}
	return workload.NewTraceGenerator(workload.Blend(pm, am, share, blendRecords, seed))
}

// kneeGrid is a scenario's true knee as a function of its conditions,
// measured on a grid and interpolated between grid points linearly in
// 1/knee: per-request work (a mix share) and per-step time (a slowdown)
// add up, so capacity, not concurrency, is what varies linearly.
type kneeGrid struct {
	shares, slowdowns []float64
	knees             [][]float64 // [share][slowdown]
}

func (k *kneeCache) grid(ctx context.Context, sc *Scenario) (*kneeGrid, error) {
	g := &kneeGrid{shares: []float64{0}, slowdowns: []float64{1}}
	shares, slowdownStep := gridSteps(sc)
	if sc.AltWorkload != "" {
		maxShare := 0.0
		for t := time.Duration(0); t <= sc.Duration; t += sc.Duration / 200 {
			maxShare = max(maxShare, sc.altShareAt(t))
		}
		for _, s := range shares {
			if s <= maxShare+0.05 {
				g.shares = append(g.shares, s)
			}
		}
	}
	if sc.Slowdown != nil {
		for i := 1; float64(i)*slowdownStep < sc.SlowdownMax-1+slowdownStep/2; i++ {
			g.slowdowns = append(g.slowdowns, min(1+float64(i)*slowdownStep, sc.SlowdownMax))
		}
		g.slowdowns = slices.Compact(g.slowdowns)
	}
	for _, share := range g.shares {
		row := make([]float64, len(g.slowdowns))
		for j, f := range g.slowdowns {
			// At nominal conditions the truth is the sweep kneewatch is
			// given; elsewhere the median of Options.TruthGridSeeds.
			// Tried instead (2026-12-07): the given sweep's knee moved by
			// the ratio of the medians there and at nominal (2 more
			// nominal searches), so its own noise would not be charged
			// only where conditions change. On the tune half (3 seeds)
			// headroom error p95 mix-ramp 0.255 -> 0.228 and mix-step
			// 0.196 -> 0.196, but throttle-ramp 0.117 -> 0.148 and
			// throttle-step 0.103 -> 0.162: a profile's speed model is
			// knees searched on their own, whose noise is not the nominal
			// search's (an 8B/H100 summarization sweep: 18.2 in flight at
			// nominal on its seed, 21.1 and 24.5 on two others, and 15.05
			// at 0.8 speed, where the three seeds' median at 1.2x slower
			// was 15.0), while the mix model is anchored at the nominal
			// knee and carries its noise. Neither truth suits both.
			caches := []*kneeCache{k}
			if share > 0 || f != 1 {
				caches = append(caches, k.gridSeeds...)
			}
			knees := make([]float64, 0, len(caches))
			for _, c := range caches {
				v, err := c.gridKnee(ctx, sc, share, f)
				if err != nil {
					return nil, err
				}
				knees = append(knees, v)
			}
			slices.Sort(knees)
			row[j] = knee.SampleQuantile(knees, 0.5)
		}
		g.knees = append(g.knees, row)
	}
	return g, nil
}

// gridKnee is one search's knee concurrency for a grid point of sc.
func (k *kneeCache) gridKnee(ctx context.Context, sc *Scenario, share, slowdown float64) (float64, error) {
	p, err := k.profile(ctx, sc.Deployment, sc.AltWorkload, share, slowdown)
	switch {
	case errors.Is(err, sim.ErrSLOUnreachable), errors.Is(err, sim.ErrOpenLoopSLOUnreachable):
		// Even one request at a time breaks the SLO (a share of
		// long prompts under a TTFT set for chat), or Poisson
		// arrivals at a tenth of the closed-loop knee's rate do:
		// every load a scenario offers is far past the knee.
		return unreachableKnee, nil
	case err != nil:
		return 0, err
	}
	return p.Knee.Concurrency, nil
}

// unreachableKnee stands for the knee of conditions under which the SLO
// breaks even at concurrency 1: small enough that any load is far past it,
// and finite so the grid's 1/knee interpolation stays a number.
const unreachableKnee = 1e-3

// gridSteps are the mix shares and the slowdown step a scenario's knee grid
// is measured at. A true knee is seconds to minutes of simulation (a
// throttled H100 chat grid at 0.1 steps took 4–5 min of the bench's run);
// the grid is interpolated in 1/knee, in which both a share and a slowdown
// act close to linearly, so a coarse grid loses little. The generated
// scenarios draw their shares and slowdowns from these points.
func gridSteps(*Scenario) ([]float64, float64) {
	return []float64{0.1, 0.2, 0.3, 0.5, 0.75, 1}, 0.2
}

// at is the true knee concurrency under the given conditions.
func (g *kneeGrid) at(share, slowdown float64) float64 {
	i, fi := bracket(g.shares, share)
	j, fj := bracket(g.slowdowns, slowdown)
	inv := func(a, b int) float64 { return 1 / g.knees[a][b] }
	i2, j2 := min(i+1, len(g.shares)-1), min(j+1, len(g.slowdowns)-1)
	lo := inv(i, j) + (inv(i, j2)-inv(i, j))*fj
	hi := inv(i2, j) + (inv(i2, j2)-inv(i2, j))*fj
	return 1 / (lo + (hi-lo)*fi)
}

// bracket finds x in sorted xs: the index at or below it and the fraction
// of the way to the next one (0 at either end).
func bracket(xs []float64, x float64) (int, float64) {
	if x <= xs[0] || len(xs) == 1 {
		return 0, 0
	}
	for i := 0; i+1 < len(xs); i++ {
		if x <= xs[i+1] {
			return i, (x - xs[i]) / (xs[i+1] - xs[i])
		}
	}
	return len(xs) - 1, 0
}
