package detection

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/workload"
)

// TestPoissonKneeSeedSpread measures how much the true knee (one Poisson
// rate search, see kneeFinder.profile) moves with nothing but the seed of
// its arrivals and requests: every suite deployment's knee at seeds 1, 2
// and 3, its request rate and its mean in flight, and each one's spread
// (largest ÷ smallest − 1). The bench gives kneewatch the knee of seed 1
// and judges it against the same measurement at the nominal conditions,
// so this noise is invisible there, and counted at every other grid point
// (a slowdown, a mix share), each a search of its own. A tool run by hand:
// KNEEWATCH_KNEE_SPREAD=1 (about 20 minutes on 2 cores).
func TestPoissonKneeSeedSpread(t *testing.T) {
	if os.Getenv("KNEEWATCH_KNEE_SPREAD") == "" {
		t.Skip("set KNEEWATCH_KNEE_SPREAD to measure the true knee's spread over seeds (~20 min)")
	}
	deps, _, err := suiteDeployments(sim.PresetNames(), workload.PresetNames())
	if err != nil {
		t.Fatal(err)
	}
	seeds := []uint64{1, 2, 3}
	caches := make([]*kneeCache, len(seeds))
	for i, s := range seeds {
		caches[i] = newKneeCache(Options{Seed: s}.withDefaults())
	}
	ctx := context.Background()
	spread := func(xs []float64) float64 { return slices.Max(xs)/slices.Min(xs) - 1 }
	var inFlightSpreads, rateSpreads []float64
	for _, dep := range deps {
		var inFlight, rates []float64
		for _, kc := range caches {
			slo, err := kc.slo(ctx, dep)
			if err != nil {
				t.Fatal(err)
			}
			d := dep
			d.SLO = slo
			p, err := kc.profile(ctx, d, "", 0, 1)
			if err != nil {
				t.Fatalf("%s/%s/%s: %v", dep.Preset, dep.Workload, dep.Tightness, err)
			}
			inFlight = append(inFlight, p.Knee.Concurrency)
			rates = append(rates, p.Knee.RequestsPerSecond)
		}
		inFlightSpreads = append(inFlightSpreads, spread(inFlight))
		rateSpreads = append(rateSpreads, spread(rates))
		fmt.Printf("%-45s in flight %6.2f %6.2f %6.2f (spread %3.0f%%)  req/s %7.4g %7.4g %7.4g (spread %3.0f%%)\n",
			dep.Preset+"/"+dep.Workload+"/"+dep.Tightness, inFlight[0], inFlight[1], inFlight[2], 100*spread(inFlight),
			rates[0], rates[1], rates[2], 100*spread(rates))
	}
	median := func(xs []float64) float64 {
		s := slices.Sorted(slices.Values(xs))
		return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
	}
	fmt.Printf("spread over %d deployments: in flight median %.0f%%, max %.0f%%; request rate median %.0f%%, max %.0f%%\n",
		len(deps), 100*median(inFlightSpreads), 100*slices.Max(inFlightSpreads), 100*median(rateSpreads), 100*slices.Max(rateSpreads))
	if math.IsNaN(median(inFlightSpreads)) {
		t.Error("no spread measured")
	}
}

// TestPoissonKneeTrialLength measures how the true knee moves with the
// length of its search's trials: a trial keeps the SLO only if the
// windowed percentile (over at least 100 requests) holds at every tick of
// its steady part, so a longer trial is a stricter test, and at a low
// request rate the default 20 minutes (stretched to 150 requests, see
// sim's trialSteady) hold one or two independent windows. For a few
// low-rate deployments and one at 3 requests/s, the knee in flight at
// seeds 1001-5001 with a steady part of 20 and of 100 minutes. A tool run
// by hand (KNEEWATCH_KNEE_TRIAL_LENGTH=1, under a minute). On 2026-12-07:
//
//	8b-L4 summarize tight (0.08 req/s)  20m: 2.95 2.00 2.57 2.12 3.34   100m: 1.88 1.85 1.88 1.97 1.73
//	8b-L4 RAG tight (0.28 req/s)        20m: 2.85 3.44 3.57 3.73 3.35   100m: 2.74 3.21 2.68 2.68 2.73
//	70B/H200 long-context tight (0.22)  20m: 13.1 13.3 12.4 13.7 13.3   100m: 7.69 8.74 7.73 7.78 7.94
//	8B/H100 RAG tight (3.1 req/s)       20m: 5.62 7.49 8.15 7.62 5.15   100m: 5.92 4.85 7.35 4.46 4.94
//
// At a low rate the longer trial is lower (the 70B long-context knee by
// 40%), and on these seeds steadier. Rerun the same day with trials sized
// by windows (10 of 100 requests at any rate, sim's trialSteady tried that
// way): 8B/L4 summarize 1.32-1.92, RAG 2.65-4.08, 70B long-context
// 7.69-10.1: lower, and no steadier. Nor is the spread the bisection's:
// with the same arrivals and lengths at every rate of a search (one seed
// per search rather than per trial), 8B/H100 RAG read 5.27-7.90. A knee's
// spread across seeds is its sample's, and sim keeps the shorter trial
// (see trialSteady for the suite's figures).
func TestPoissonKneeTrialLength(t *testing.T) {
	if os.Getenv("KNEEWATCH_KNEE_TRIAL_LENGTH") == "" {
		t.Skip("set KNEEWATCH_KNEE_TRIAL_LENGTH to measure the true knee against its trials' length (under a minute)")
	}
	ctx := context.Background()
	o := Options{}.withDefaults()
	kc := newKneeCache(o)
	for _, dep := range []Deployment{
		{Preset: "llama-3.1-8b-l4", Workload: "summarize", Tightness: "tight"},
		{Preset: "llama-3.1-8b-l4", Workload: "rag", Tightness: "tight"},
		{Preset: "llama-3.3-70b-fp8-h200", Workload: "long-context", Tightness: "tight"},
		{Preset: "llama-3.1-8b-h100", Workload: "rag", Tightness: "tight"},
	} {
		slo, err := kc.slo(ctx, dep)
		if err != nil {
			t.Fatal(err)
		}
		preset, err := sim.LoadPreset(dep.Preset)
		if err != nil {
			t.Fatal(err)
		}
		for _, steady := range []time.Duration{poissonSteady, 5 * poissonSteady} {
			var knees []float64
			ol, _ := poissonSearch(o)
			ol.Steady = steady
			for i := uint64(1); i <= 5; i++ {
				p, err := poissonKneeWith(ctx, dep.Workload, preset, 1, slo, i*1000+1, ol)
				if err != nil {
					t.Fatal(err)
				}
				knees = append(knees, p.Knee.Concurrency)
			}
			fmt.Printf("%s/%s %s: steady %s, knees in flight %.3g\n", dep.Preset, dep.Workload, dep.Tightness, steady, knees)
		}
	}
}

// TestPoissonKneeRateAtOtherSeeds runs each suite deployment's knee rate
// (seed 1's search) again on seeds 2-6 and prints whether each trial kept
// the SLO and its mean in-flight load against the knee's. The search keeps
// the largest rate a trial kept, so its knee is a rate that other draws of
// the same traffic keep about half the time, and its in-flight load that
// of a draw lucky enough to keep it. A tool run by hand
// (KNEEWATCH_KNEE_OTHER_SEEDS=1, under a minute). On 2026-12-07, 28
// deployments: 79 of 140 trials kept the SLO; the other seeds' median
// in-flight load was within ±5% of the knee's at 14 deployments, above it
// by 18-64% at the 8B/L4's summarization and RAG ones (under 0.3
// requests/s), and 1.9-12× at three long-context ones, where draws'
// queues grew without bound over the 20 minutes (the 70B/H200
// long-context tight knee: 11.9 in flight; other seeds 12.6, 27.2, 33.9,
// 56.8, 129). Tried the same day and not kept: the knee as the trial of
// median in-flight load among those that kept the SLO at its rate, the
// search's own and 4 more seeds', in every search (the truth's grid and
// the given profile's models too). On the tune half, against the search's
// own trial: the same 2 safe scenarios paged and 12 false pages in all,
// early 15 of 18 (17 of 19), abrupt 50 of 53 (49 of 52), headroom error
// p95 mix-ramp 0.180 (0.255) but mix-step 0.217 (0.196) and throttle-ramp
// 0.138 (0.117). The false pages are not the lucky trial's.
func TestPoissonKneeRateAtOtherSeeds(t *testing.T) {
	if os.Getenv("KNEEWATCH_KNEE_OTHER_SEEDS") == "" {
		t.Skip("set KNEEWATCH_KNEE_OTHER_SEEDS to rerun every deployment's knee rate on other seeds (under a minute)")
	}
	ctx := context.Background()
	o := Options{}.withDefaults()
	kc := newKneeCache(o)
	deps, _, err := suiteDeployments(sim.PresetNames(), workload.PresetNames())
	if err != nil {
		t.Fatal(err)
	}
	ol, _ := poissonSearch(o)
	kept, trials := 0, 0
	for _, dep := range deps {
		slo, err := kc.slo(ctx, dep)
		if err != nil {
			t.Fatal(err)
		}
		preset, err := sim.LoadPreset(dep.Preset)
		if err != nil {
			t.Fatal(err)
		}
		p, err := poissonKneeWith(ctx, dep.Workload, preset, 1, slo, o.Seed, ol)
		if err != nil {
			t.Fatal(err)
		}
		gen, err := blendGenerator(dep.Workload, "", 0, o.Seed)
		if err != nil {
			t.Fatal(err)
		}
		var inFlight []float64
		var keptHere int
		for seed := uint64(2); seed <= 6; seed++ {
			lv, err := sim.RunOpenLoop(ctx, sim.OpenLoopLevelConfig{Engine: sim.Config{Preset: preset}, Workload: gen,
				Rate: p.Knee.RequestsPerSecond, SLO: slo, Seed: seed, OpenLoop: ol})
			if err != nil {
				t.Fatal(err)
			}
			inFlight = append(inFlight, lv.Point.Concurrency)
			if lv.KeptSLO {
				keptHere++
			}
		}
		kept, trials = kept+keptHere, trials+len(inFlight)
		slices.Sort(inFlight)
		fmt.Printf("%s/%s/%s: knee %.3g in flight at %.3g requests/s; other seeds there %.3g in flight (median ÷ knee %.2f), %d of %d kept the SLO\n",
			dep.Preset, dep.Workload, dep.Tightness, p.Knee.Concurrency, p.Knee.RequestsPerSecond, inFlight,
			inFlight[len(inFlight)/2]/p.Knee.Concurrency, keptHere, len(inFlight))
	}
	fmt.Printf("%d of %d trials at the knee rates kept the SLO\n", kept, trials)
	if trials == 0 {
		t.Error("no trial ran")
	}
}
