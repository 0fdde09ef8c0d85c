package detection

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
	"github.com/kneewatch/kneewatch/sweep"
	"github.com/kneewatch/kneewatch/workload"
)

// poissonVariant is one way to run the sweep's open-loop trials, compared
// by TestSweepPoissonVariants: the sweep's, with a longer warm-up, more
// requests per trial or a verdict at a share of the thresholds.
type poissonVariant struct {
	name          string
	warmup        time.Duration
	warmupLatency float64 // the warm-up runs at least this many of the closed-loop knee's request latencies
	requests      int
	share         float64 // kept only where every windowed percentile ≤ share × its threshold (0: the thresholds)
	seed          uint64  // the trials' arrivals and lengths (0: 1)
	// horizon, when set, eases the share toward 1 as a trial's steady part
	// nears it: share + (1 − share) × min(1, steady ÷ horizon).
	horizon time.Duration
	// noPreempt: a trial is not kept when a request that finished in its
	// steady part was preempted (a KV cache that overflowed).
	noPreempt bool
	// kvPeak, when set, does not keep a trial whose KV-cache usage
	// reached it after any step of its steady part.
	kvPeak float64
	// runaway does not keep a trial whose requests in flight kept growing
	// through its steady part (measure.Runaway; the zero value never).
	runaway measure.Runaway
	// runawaySD, when set, asks the growth to be this many × √(the first
	// third's in-flight requests) too: a floor that grows with the chance
	// swings of a count.
	runawaySD float64
	// runawayZ, when set, does not keep a trial whose in-flight growth from
	// the first to the last third is this many standard errors of chance
	// (a count's time average over a third, its requests' lifetimes apart).
	runawayZ float64
	// confirm, when > 0, runs the best kept rate again on other draws, up
	// to this many times (see emulatePoissonVariant).
	confirm int
	// low and steps, when set, are the rate search's (knee.RateSearch);
	// 0 takes the sweep's defaults.
	low   float64
	steps int
	// skipBrokenStart records the search's first rate as broken without
	// a trial when it is a broken closed-loop level's rate (startBroken).
	skipBrokenStart, startBroken bool
}

// emulatePoissonVariant is emulatePoisson with v's settings.
// latency is the closed-loop knee's mean request latency, for
// v.warmupLatency.
func emulatePoissonVariant(ctx context.Context, p sim.Preset, gen *workload.Generator, slo knee.SLO, closedRate float64, latency time.Duration, v poissonVariant) (emulatedPoisson, error) {
	ol := sweep.OpenLoopConfig{PoissonSearch: knee.PoissonSearch{Warmup: v.warmup, Steady: sweep.DefaultOpenLoopSteady,
		Tick: sweep.DefaultOpenLoopTick, SLOWindow: knee.DefaultSLOWindow, Low: sweep.DefaultOpenLoopLow, Steps: sweep.DefaultOpenLoopSteps},
		Requests: v.requests}
	if v.low > 0 {
		ol.Low = v.low
	}
	if v.steps > 0 {
		ol.Steps = v.steps
	}
	search, err := knee.NewRateSearch(ol.Low, ol.Steps)
	if err != nil {
		return emulatedPoisson{}, err
	}
	// Judged as sweep.RunTrial judges: misses stamped, and windows walked,
	// against the thresholds times the share.
	var e emulatedPoisson
	try := func(rate float64, seed uint64) (bool, error) {
		steady := ol.SteadyFor(rate)
		share := v.share
		if v.horizon > 0 && share > 0 {
			share += (1 - share) * min(1, steady.Seconds()/v.horizon.Seconds())
		}
		strict := sweep.TrialConfig{SLO: slo, ThresholdShare: share}.JudgedSLO()
		warm := max(ol.Warmup, time.Duration(v.warmupLatency*float64(latency)).Round(time.Second))
		lv, err := sim.RunOpenLoop(ctx, sim.OpenLoopLevelConfig{Engine: sim.Config{Preset: p}, Workload: gen, Rate: rate, SLO: strict, Seed: seed,
			OpenLoop: sim.OpenLoopConfig{Warmup: warm, Steady: steady, Tick: ol.Tick, SLOWindow: ol.SLOWindow, Low: ol.Low, Steps: ol.Steps}})
		if err != nil {
			return false, fmt.Errorf("poisson trial at %g requests/s: %w", rate, err)
		}
		w := knee.WalkSLO(lv.TTFT, lv.TPOT, strict, ol.SLOWindow, -1, lv.SteadyFrom, lv.End, ol.Tick)
		kept := !w.Breached && w.Judged > 0
		if v.kvPeak > 0 && lv.KVPeak >= v.kvPeak {
			kept = false
		}
		if g := lv.InFlightThirds; v.runaway.Judged(warm, sim.MeanDecode(lv.Window)) && v.runaway.RanAway(g[0], g[1]) && g[1]-g[0] >= v.runawaySD*math.Sqrt(g[0]) {
			kept = false
		}
		if g := lv.InFlightThirds; v.runawayZ > 0 && g[1] > g[0] {
			m := lv.Point.Concurrency
			tau := m / rate
			w := steady.Seconds() / 3
			if se := math.Sqrt(4 * m * max(tau, 1) / w); (g[1]-g[0])/se >= v.runawayZ {
				kept = false
			}
		}
		if v.noPreempt && kept {
			for _, r := range lv.Window {
				if r.Preemptions > 0 {
					kept = false
					break
				}
			}
		}
		e.trials++
		e.tried = append(e.tried, emulatedTrial{rate: rate, inFlight: lv.Point.Concurrency, kept: kept})
		e.elapsed += warm + steady
		if w.Breached {
			e.elapsed -= lv.End.Sub(w.At)
		}
		return kept, nil
	}
	var keptRates []float64
	for {
		f, ok := search.Next()
		if !ok {
			break
		}
		rate := f * closedRate
		if f == 1 && v.skipBrokenStart && v.startBroken {
			search.Record(false)
			continue
		}
		kept, err := try(rate, max(v.seed, 1))
		if err != nil {
			return e, err
		}
		search.Record(kept)
		if kept {
			e.rate = rate
			e.inFlight = e.tried[len(e.tried)-1].inFlight
			keptRates = append(keptRates, rate)
		}
	}
	// A confirmation: the best kept rate run again on other draws; where
	// it breaks, the next best kept rate is the knee (and is confirmed in
	// turn, up to v.confirm trials).
	slices.Sort(keptRates)
	for round := 0; round < v.confirm && len(keptRates) > 0; round++ {
		best := keptRates[len(keptRates)-1]
		kept, err := try(best, max(v.seed, 1)+uint64(round+1)*104729)
		if err != nil {
			return e, err
		}
		if kept {
			break
		}
		keptRates = keptRates[:len(keptRates)-1]
		e.rate = 0
		if len(keptRates) > 0 {
			e.rate = keptRates[len(keptRates)-1]
		}
	}
	return e, nil
}

// TestSweepPoissonVariants compares ways to run the sweep's open-loop
// trials against the true Poisson knee (the detection bench's: 5 min
// warm-up, 20 min steady parts), the median of its searches with seeds 1
// to poissonSeeds, by the halves of make bench-sweep (sweepTimeHalf). Each
// variant's search starts where the sweep's does, after its closed loop
// stops past the first break (emulateDoubling), and is run with the same
// seeds; every search counts
// on its own, as one operator's sweep. A tool run by hand:
// KNEEWATCH_POISSON_VARIANTS=1 (about 1 minute on 2 cores).
//
// sweep.DefaultThresholdShare was chosen with it (2026-12-04, see there).
// A share eased toward 1 as a trial's steady part nears 20 or 40 minutes
// (the truth's horizon: a trial as long as the truth's needs no margin)
// did not beat a flat 90% on half A: 29 to 32 of 56 from shares of 75% to
// 90%, against 32. The lowest shares lean low on half B (−3% at 75%).
// An earlier run, against the truth's seed 1 alone and one seed per
// variant, found that longer warm-ups (3 min, or 100 requests) or trials
// (300 requests) took half A from 4 to 5 or 6 of 14 within ±10%, for
// 43-65% more trial time.
//
// Run again on 2026-12-06 from the new start (the closed loop stopped after
// its first break and one probe; 194 s), sweeps within ±10% of the truth
// and sweeps of fast deployments over 20 minutes, half A then half B (56
// sweeps each; 24 and 36 of fast deployments): share 90% (shipped) 30, 8
// and 38, 5; share 80% 31, 7 and 40, 2, but reading a median −6.8% low on
// A; a 45 s warm-up instead of 1 min 30, 8 and 37, 4; 30 s 28, 7 and 37,
// 2. On half A nothing moved the 20-minute count by more than one sweep,
// so the defaults stay.
//
// Run again on 2026-12-07 with a trial not kept where the replica
// preempted a request in its steady part (the sweep reads
// vllm:num_preemptions_total): a 20-minute run at the 8B/H100
// long-context deployments' found rate (0.737 requests/s against a truth
// of 0.56-0.59) fell into preemption and recompute after 2 to 6 minutes,
// and the queue ran away, so a preemption in the trial looked like the
// warning. It is not one the trial sees: at 90% of the thresholds half A
// had 31 → 30 of 56 within ±10% (bias +1.9% → +0.5%; the long-context rows
// did not move: the trials they keep preempt nothing), half B 44 → 44.
// Nor is a KV cache that filled (a trial not kept where the KV-cache usage
// after any step of its steady part reached 99%, 95% or 90%, the
// simulator's OpenLoopLevel.KVPeak): half A 31 → 28, 27, 24 within ±10%,
// half B 44 → 44, 42, 41; the 8B/H100 long-context rows moved by one
// search step at most (+32% → +25% at 95%).
//
// Run again on 2026-12-07 with a trial not kept where its requests in
// flight kept climbing (the simulator's OpenLoopLevel.InFlightThirds, the
// first and last third of the steady part; the sweep's client counts the
// same): the 8B/H100 long-context trials at 0.737 requests/s were already
// growing. Past 60% and 3 requests, judged where the warm-up lasted twice
// a request's decode, half A 31 → 36 of 56 within ±10%, half B
// 44 → 45, and it became the default (measure.Runaway has every setting
// tried; KNEEWATCH_POISSON_VARIANTS=runaway, 35 s). The variants above now
// run with it.
//
// Then, with the runaway test (before its warm-up condition;
// KNEEWATCH_POISSON_VARIANTS=confirm, 40 s): the best kept rate run once
// more on other draws, the next best kept rate the knee where it broke.
// Half A 36 → 35 of 56 within ±10% (p90 0.252 → 0.214), half B 46 → 47, for 16% more trial time, and fast
// deployments' sweeps over 20 minutes 5 → 8 of 24 and 3 → 10 of 36; up to
// two confirmations, 31 and 45 (at 95% or 100% of the thresholds, 32 and
// 42). Not adopted.
//
// The variants' names: the share of the thresholds trials are judged at,
// the warm-up's floor in the knee's request latencies, and the requests a
// trial's steady part holds.
func TestSweepPoissonVariants(t *testing.T) {
	if os.Getenv("KNEEWATCH_POISSON_VARIANTS") == "" {
		t.Skip("set KNEEWATCH_POISSON_VARIANTS=1")
	}
	base := poissonVariant{warmup: sweep.DefaultOpenLoopWarmup, requests: sweep.DefaultOpenLoopRequests, runaway: measure.DefaultRunaway}
	with := func(name string, share, latencies float64, requests int) poissonVariant {
		v := base
		v.name, v.share, v.warmupLatency = name, share, latencies
		if requests > 0 {
			v.requests = requests
		}
		return v
	}
	variants := []poissonVariant{
		with("share 100%", 1, 0, 0),
		with("share 95%", 0.95, 0, 0),
		with("share 90%", 0.9, 0, 0),
		with("share 80%", 0.8, 0, 0),
		with("share 75%", 0.75, 0, 0),
		with("share 70%", 0.7, 0, 0),
	}
	for _, sh := range []float64{0.9, 0.85, 0.8, 0.75} {
		for _, h := range []time.Duration{20 * time.Minute, 40 * time.Minute} {
			v := with(fmt.Sprintf("share %.0f%% to 100%% at %s", 100*sh, h), sh, 0, 0)
			v.horizon = h
			variants = append(variants, v)
		}
	}
	np := with("share 90%, no preemption", 0.9, 0, 0)
	np.noPreempt = true
	variants = append(variants, np)
	np = with("share 100%, no preemption", 1, 0, 0)
	np.noPreempt = true
	variants = append(variants, np)
	for _, peak := range []float64{0.99, 0.95, 0.9} {
		v := with(fmt.Sprintf("share 90%%, KV peak under %.0f%%", 100*peak), 0.9, 0, 0)
		v.kvPeak = peak
		variants = append(variants, v)
	}
	for _, w := range []time.Duration{45 * time.Second, 30 * time.Second} {
		v := with(fmt.Sprintf("share 90%%, warm-up %s", w), 0.9, 0, 0)
		v.warmup = w
		variants = append(variants, v)
	}
	if os.Getenv("KNEEWATCH_POISSON_VARIANTS") == "confirm" {
		variants = []poissonVariant{with("share 90% (shipped)", 0.9, 0, 0)}
		for _, c := range []int{1, 2} {
			v := with(fmt.Sprintf("share 90%%, the best kept rate confirmed, %d trials at most", c), 0.9, 0, 0)
			v.confirm = c
			variants = append(variants, v)
		}
		for _, sh := range []float64{0.95, 1} {
			v := with(fmt.Sprintf("share %.0f%%, the best kept rate confirmed, 2 trials at most", 100*sh), sh, 0, 0)
			v.confirm = 2
			variants = append(variants, v)
		}
	}
	// KNEEWATCH_POISSON_VARIANTS=runaway: the runaway test's settings
	// (measure.Runaway says what was chosen and why).
	if os.Getenv("KNEEWATCH_POISSON_VARIANTS") == "runaway" {
		runaway := func(growth, requests, sd float64) poissonVariant {
			v := with(fmt.Sprintf("share 90%%, runaway past %.0f%% and %g requests", 100*growth, requests), 0.9, 0, 0)
			if sd > 0 {
				v.name += fmt.Sprintf(" and %g√ of the first third's", sd)
			}
			v.runaway, v.runawaySD = measure.Runaway{Growth: growth, Requests: requests}, sd
			return v
		}
		variants = nil
		for _, k := range []float64{0, 1, 3} {
			v := with(fmt.Sprintf("share 90%%, runaway past 60%% and 3 requests, judged where the warm-up is %g× the decode", k), 0.9, 0, 0)
			v.runaway = measure.Runaway{Growth: 0.6, Requests: 3, Settle: k}
			variants = append(variants, v)
		}
		for _, k := range []float64{1, 2, 3} {
			v := with(fmt.Sprintf("share 90%%, warm-up ≥ %g× the knee's latency", k), 0.9, k, 0)
			variants = append(variants, v)
			v = with(fmt.Sprintf("share 90%%, warm-up ≥ %g× the knee's latency, runaway judged always", k), 0.9, k, 0)
			v.runaway.Settle = 0
			variants = append(variants, v)
		}
		none := with("share 90%, no runaway test", 0.9, 0, 0)
		none.runaway = measure.Runaway{}
		variants = append(variants, with("share 90% (shipped)", 0.9, 0, 0), none,
			runaway(0.6, 1, 0), runaway(0.6, 2, 0), runaway(0.4, 2, 0), runaway(0.8, 2, 0), runaway(1, 2, 0),
			runaway(0.6, 2, 2), runaway(0.4, 2, 2), runaway(0.8, 2, 2))
		for _, z := range []float64{2, 3} {
			v := with(fmt.Sprintf("share 90%%, runaway past %g standard errors", z), 0.9, 0, 0)
			v.runaway, v.runawayZ = measure.Runaway{}, z
			variants = append(variants, v)
		}
	}
	// KNEEWATCH_POISSON_VARIANTS=search: the rate search's low end,
	// halvings, and whether a broken start is tried.
	if os.Getenv("KNEEWATCH_POISSON_VARIANTS") == "search" {
		search := func(low float64, steps int, skip bool) poissonVariant {
			v := with(fmt.Sprintf("low %g, %d halvings", low, steps), 0.9, 0, 0)
			if skip {
				v.name += ", broken start untried"
			}
			v.low, v.steps, v.skipBrokenStart = low, steps, skip
			return v
		}
		variants = []poissonVariant{with("share 90% (shipped)", 0.9, 0, 0),
			search(0.2, 4, true), search(0.2, 3, false), search(0.2, 3, true),
			search(0.4, 3, false), search(0.4, 3, true), search(0.5, 3, true), search(0.4, 4, true)}
	}
	deps, _, err := suiteDeployments(sim.PresetNames(), workload.PresetNames())
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		half  string
		truth float64
		fast  bool              // a truth of ≥ 1 request/s: the 20-minute goal applies
		found [][]float64       // per variant, per seed: found ÷ truth − 1
		time  [][]time.Duration // per variant, per seed: the closed-loop search plus the trials
	}
	ctx := context.Background()
	var (
		mu   sync.Mutex
		rows []row
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, 2)
	for _, d := range deps {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			pt, ok, err := measurePoissonTruth(ctx, d)
			if err != nil {
				t.Error(err)
			}
			if !ok {
				return
			}
			p, gen, slo, cl := pt.preset, pt.gen, pt.slo, pt.closed
			var truths []float64
			for _, k := range pt.knees {
				truths = append(truths, k.RequestsPerSecond)
			}
			r := row{half: sweepTimeHalf(d), truth: median(truths)}
			r.fast = r.truth >= 1
			latency := time.Duration(cl.knee / cl.kneeRate * float64(time.Second))
			line := fmt.Sprintf("%s %s/%s %s truth %.3g:", r.half, d.Preset, d.Workload, d.Tightness, r.truth)
			for _, v := range variants {
				var found []float64
				var took []time.Duration
				for seed := uint64(1); seed <= poissonSeeds; seed++ {
					v.seed = seed
					v.startBroken = cl.startRate == cl.breakRate
					e, err := emulatePoissonVariant(ctx, p, gen, slo, cl.startRate, latency, v)
					if err != nil {
						t.Error(err)
						return
					}
					found = append(found, e.rate/r.truth-1)
					took = append(took, cl.elapsed+e.elapsed)
				}
				r.found, r.time = append(r.found, found), append(r.time, took)
				line += fmt.Sprintf(" [%s]", strings.Trim(fmt.Sprintf("%+.0f", scaled(found, 100)), "[]"))
			}
			fmt.Println(line)
			mu.Lock()
			rows = append(rows, r)
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, half := range []string{"A", "B"} {
		for j, v := range variants {
			var abs, bias []float64
			within, fastN, fastOver := 0, 0, 0
			var total time.Duration
			for _, r := range rows {
				if r.half != half {
					continue
				}
				for s, e := range r.found[j] {
					abs = append(abs, math.Abs(e))
					if math.Abs(e) <= 0.1 {
						within++
					}
					total += r.time[j][s]
					if r.fast {
						fastN++
						if r.time[j][s] > 20*time.Minute {
							fastOver++
						}
					}
				}
				bias = append(bias, median(r.found[j]))
			}
			if len(abs) == 0 {
				continue
			}
			sort.Float64s(abs)
			fmt.Printf("half %s %-34s sweeps %d within10 %d median|err| %.3f p90 %.3f bias %+.3f time %s fast over 20 min %d of %d\n",
				half, v.name, len(abs), within, abs[len(abs)/2], abs[int(0.9*float64(len(abs)-1))], median(bias), total.Round(time.Minute), fastOver, fastN)
		}
	}
}

// poissonTruth is one deployment as the Poisson tools compare against it:
// its derived SLO, preset and workload (seed 1), the sweep's closed loop
// before the open-loop search (emulateDoubling), and the true poisson knee
// at seeds 1 to poissonSeeds (the detection bench's 20-minute search).
type poissonTruth struct {
	slo    knee.SLO
	preset sim.Preset
	gen    *workload.Generator
	closed emulated
	knees  []knee.Knee
}

// measurePoissonTruth measures d's poissonTruth; false, with a nil error,
// when the deployment has no knee to compare with (its closed loop found
// no rate, or a seed's search none).
func measurePoissonTruth(ctx context.Context, d Deployment) (poissonTruth, bool, error) {
	slo, err := deriveSLO(ctx, d)
	if err != nil {
		return poissonTruth{}, false, err
	}
	p, _ := sim.LoadPreset(d.Preset)
	gen, _ := workload.Resolve(d.Workload, 1)
	cl, err := emulateDoubling(ctx, p, gen, slo)
	if err != nil || !(cl.kneeRate > 0) || !(cl.startRate > 0) {
		return poissonTruth{}, false, nil
	}
	pt := poissonTruth{slo: slo, preset: p, gen: gen, closed: cl}
	for seed := uint64(1); seed <= poissonSeeds; seed++ {
		g, _ := workload.Resolve(d.Workload, seed)
		k, err := sim.FindKnee(ctx, sim.KneeConfig{Engine: sim.Config{Preset: p}, Workload: g, SLO: slo, Seed: seed,
			MaxConcurrency: sweep.DefaultMaxConcurrency, Arrivals: knee.ArrivalsPoisson,
			OpenLoop: sim.OpenLoopConfig{Warmup: poissonWarmup, Steady: poissonSteady, Low: poissonLow, Steps: poissonSteps}})
		if err != nil {
			return poissonTruth{}, false, nil
		}
		pt.knees = append(pt.knees, k.Knee)
	}
	return pt, true, nil
}

// scaled is xs times k.
func scaled(xs []float64, k float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = k * x
	}
	return out
}
