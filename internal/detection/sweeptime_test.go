package detection

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
	"github.com/kneewatch/kneewatch/sweep"
	"github.com/kneewatch/kneewatch/workload"
)

// sweepReport, when set, has TestSweepTimeBench run every suite deployment
// and write its report there (make bench-sweep).
var sweepReport = flag.String("sweep.report", "", "write the sweep-time bench over every suite deployment to this file")

// emulated is one closed-loop sweep run as `kneewatch sweep` runs it, in
// the simulator's virtual time.
type emulated struct {
	knee     float64
	levels   int
	elapsed  time.Duration // the levels' virtual time, warm-ups included
	early    int           // levels stopped early (either rule)
	screened int
	reason   string
	// single is the mean request's length at concurrency 1.
	single time.Duration
	// kneeRate is the request rate at the knee's level, where a Poisson
	// search starts.
	kneeRate float64
	// breakRate is the request rate at the first level past the knee (the
	// bracket's upper end), 0 when the search ended without one.
	breakRate float64
	// startRate is where the sweep's Poisson search starts after this
	// closed loop: the lowest broken level's rate, or the last kept
	// level's where the broken one's collapsed (sweep.OpenLoopStart).
	startRate float64
}

// emulatedPoisson is the sweep's open-loop search after a closed-loop one,
// in virtual time.
type emulatedPoisson struct {
	rate    float64 // the best kept rate, requests/s (0: none)
	trials  int
	elapsed time.Duration
	// inFlight is the best kept trial's mean in-flight requests over its
	// steady part (the profile's knee concurrency).
	inFlight float64
	// tried lists every trial in the order run.
	tried []emulatedTrial
}

// emulatedTrial is one open-loop trial of an emulated search.
type emulatedTrial struct {
	rate, inFlight float64
	kept           bool
}

// emulatePoisson runs the sweep's open-loop search (knee.RateSearch with
// the sweep's low end and halvings) from the closed-loop knee's rate, each
// trial with the sweep's warm-up, a steady part sized by the requests it
// needs (sweep.OpenLoopConfig.SteadyFor) and judged as the sweep judges it
// (windows reaching back as far as 100 requests need, knee.WalkSLO),
// stopped at its first breached tick.
// Seed picks the trials' arrivals and request lengths.
func emulatePoisson(ctx context.Context, p sim.Preset, gen *workload.Generator, slo knee.SLO, closedRate float64, seed uint64) (emulatedPoisson, error) {
	return emulatePoissonVariant(ctx, p, gen, slo, closedRate, 0, poissonVariant{warmup: sweep.DefaultOpenLoopWarmup, requests: sweep.DefaultOpenLoopRequests, share: sweep.DefaultThresholdShare, runaway: measure.DefaultRunaway, seed: seed})
}

// poissonSeeds is how many seeds the true poisson knee, and the sweep's
// open-loop search beside it, are measured with. Either is a bisection on
// verdicts that are themselves random near the knee (whether a trial meets
// a bad window), so one seed is one draw: over seeds 1-4 the truth of
// 8B/H100 RAG (tight) read 3.14-4.04 requests/s and of 8B/L4 summarize
// (tight) 0.067-0.112. The bench compares the sweep with the truth's
// median, the rate at which a 20-minute run breaches about half the time.
const poissonSeeds = 4

// emulateSweep runs the sweep's search (measure.Search with the sweep's
// precision, and the sweep's window sizes) against the virtual-time
// engine, each level with the sweep's warm-up and window and the given
// early-stopping rule. Its elapsed time is what the levels would take at
// real speed; the preflight probe and the HTTP overhead are left out.
func emulateSweep(ctx context.Context, p sim.Preset, gen *workload.Generator, slo knee.SLO, early measure.Early) (emulated, error) {
	return emulateSweepAt(ctx, p, gen, slo, early, sweep.DefaultPrecision, false)
}

// emulateDoubling is the closed loop of a sweep with Poisson arrivals
// (sweep.Run with measure.Search.StopAtBreak): the doubling, every level
// screened, stopped after its first break and sweep.DefaultBreakProbes
// refinement levels, with no confirmation. Its startRate is where the
// open-loop search starts.
func emulateDoubling(ctx context.Context, p sim.Preset, gen *workload.Generator, slo knee.SLO) (emulated, error) {
	return emulateSweepAt(ctx, p, gen, slo, measure.DefaultEarly, sweep.DefaultPrecision, true)
}

// emulateSweepAt is emulateSweep with the search's precision given, and
// stopped at the first break when stopAtBreak is set.
func emulateSweepAt(ctx context.Context, p sim.Preset, gen *workload.Generator, slo knee.SLO, early measure.Early, precision float64, stopAtBreak bool) (emulated, error) {
	search, err := measure.NewSearch(sweep.DefaultMaxConcurrency, precision, 0)
	if err != nil {
		return emulated{}, err
	}
	search.StopAtBreak = stopAtBreak
	search.BreakProbes = sweep.DefaultBreakProbes
	// No saturation stop: a flat throughput with the SLO still met is not the
	// knee (on the suite it put it up to 35% low); the levels past it are
	// cheap to break with early stopping.
	var e emulated
	var points []knee.Point
	minReq := sweep.DefaultMinRequests(slo.Quantile)
	concs, levels, err := sim.DriveSearch(ctx, search, func(step measure.Step) sim.LevelConfig {
		c := step.Concurrency
		return sim.LevelConfig{
			Engine: sim.Config{Preset: p}, Workload: gen.WithSeed(uint64(c)*7919 + 1), SLO: slo,
			WarmupRequests: sweep.DefaultWarmup(c), WindowRequests: sweep.WindowRequests(c, minReq),
			Early: early, MayScreen: step.MayScreen,
		}
	})
	if err != nil {
		return e, err
	}
	for i, lv := range levels {
		c := concs[i]
		e.levels++
		e.elapsed += lv.Elapsed
		if c == 1 && len(lv.Window) > 0 {
			e.single = lv.Duration / time.Duration(len(lv.Window))
		}
		if lv.Stopped != measure.Undecided {
			e.early++
		}
		if lv.Stopped == measure.Screened {
			e.screened++
		}
		// A confirmation replaces the screened point.
		points = slices.DeleteFunc(points, func(pt knee.Point) bool { return pt.Concurrency == float64(c) })
		points = append(points, lv.Point)
	}
	e.reason = search.Done()
	if _, hi := search.Bracket(); hi > 0 {
		if pt, ok := knee.PointAt(points, float64(hi)); ok {
			e.breakRate = pt.RequestsPerSecond
		}
	}
	if pt, ok := sweep.OpenLoopStart(points, search); ok {
		e.startRate = pt.RequestsPerSecond
	}
	slices.SortFunc(points, func(a, b knee.Point) int { return int(a.Concurrency - b.Concurrency) })
	if k, err := knee.FindFromPoints(points, slo); err == nil {
		e.knee = k.Concurrency
		if pt, ok := knee.PointAt(points, k.Concurrency); ok {
			e.kneeRate = pt.RequestsPerSecond
		}
	}
	return e, nil
}

type sweepTimeRow struct {
	dep          Deployment
	half         string
	truth        float64
	fixed, early emulated
	// doubling is the closed loop of a sweep with Poisson arrivals: it
	// stops at its first break, and the open-loop search starts there.
	doubling emulated
	// truthRate is the median of the simulator's poisson knee rates over
	// poissonSeeds seeds (the detection bench's settings), truthRates
	// each of them; poisson is the sweep's open-loop search after the
	// doubling, with seed 1 (one sweep, as an operator
	// runs it), and poissonRates its found rates over the same seeds.
	truthRate    float64
	truthRates   []float64
	poisson      emulatedPoisson
	poissonRates []float64
}

// sweepTimeHalf splits the deployments into two halves by a hash of their
// name. The binomial test's settings were fixed before either was run and
// the screening window's were chosen on half A; the report shows both, so
// half B is held out for every setting.
func sweepTimeHalf(d Deployment) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%s/%s", d.Preset, d.Workload, d.Tightness)
	if h.Sum32()%2 == 0 {
		return "A"
	}
	return "B"
}

// sweptDeployment is a suite deployment ready to sweep in virtual time,
// with its true closed-loop knee.
type sweptDeployment struct {
	preset sim.Preset
	gen    *workload.Generator
	slo    knee.SLO
	truth  knee.Profile
}

// loadSweepDeployment resolves d and finds its true knee (sim.FindKnee,
// seed 1); false, logged, when it has none.
func loadSweepDeployment(t *testing.T, ctx context.Context, d Deployment) (sweptDeployment, bool) {
	t.Helper()
	slo, err := deriveSLO(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.LoadPreset(d.Preset)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := workload.Resolve(d.Workload, 1)
	if err != nil {
		t.Fatal(err)
	}
	truth, err := sim.FindKnee(ctx, sim.KneeConfig{Engine: sim.Config{Preset: p}, Workload: gen, SLO: slo, Seed: 1, MaxConcurrency: sweep.DefaultMaxConcurrency})
	if err != nil {
		t.Logf("%s/%s %s: no true knee (%v); skipped", d.Preset, d.Workload, d.Tightness, err)
		return sweptDeployment{}, false
	}
	return sweptDeployment{preset: p, gen: gen, slo: slo, truth: truth}, true
}

func runSweepTime(t *testing.T, deps []Deployment) []sweepTimeRow {
	t.Helper()
	ctx := context.Background()
	var rows []sweepTimeRow
	for _, d := range deps {
		dep, ok := loadSweepDeployment(t, ctx, d)
		if !ok {
			continue
		}
		p, gen, slo, truth := dep.preset, dep.gen, dep.slo, dep.truth
		row := sweepTimeRow{dep: d, half: sweepTimeHalf(d), truth: truth.Knee.Concurrency}
		var err error
		if row.fixed, err = emulateSweep(ctx, p, gen, slo, measure.Early{}); err != nil {
			t.Fatal(err)
		}
		if row.early, err = emulateSweep(ctx, p, gen, slo, measure.DefaultEarly); err != nil {
			t.Fatal(err)
		}
		if row.doubling, err = emulateDoubling(ctx, p, gen, slo); err != nil {
			t.Fatal(err)
		}
		if row.doubling.startRate > 0 && row.early.kneeRate > 0 {
			for seed := uint64(1); seed <= poissonSeeds; seed++ {
				e, err := emulatePoisson(ctx, p, gen, slo, row.doubling.startRate, seed)
				if err != nil {
					t.Fatal(err)
				}
				if seed == 1 {
					row.poisson = e
				}
				row.poissonRates = append(row.poissonRates, e.rate)
			}
			row.truthRates = poissonTruthRates(t, ctx, p, d.Workload, slo)
			if len(row.truthRates) == poissonSeeds {
				row.truthRate = median(row.truthRates)
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// poissonTruthRates are the simulator's poisson knee rates for seeds 1 to
// poissonSeeds (the detection bench's settings), nil when a seed has none.
func poissonTruthRates(t *testing.T, ctx context.Context, p sim.Preset, workloadName string, slo knee.SLO) []float64 {
	t.Helper()
	var rates []float64
	for seed := uint64(1); seed <= poissonSeeds; seed++ {
		// The truth's request lengths are drawn from the same seed as its
		// arrivals, as FindKnee's are.
		g, err := workload.Resolve(workloadName, seed)
		if err != nil {
			t.Fatal(err)
		}
		truthP, err := sim.FindKnee(ctx, sim.KneeConfig{Engine: sim.Config{Preset: p}, Workload: g, SLO: slo, Seed: seed,
			MaxConcurrency: sweep.DefaultMaxConcurrency, Arrivals: knee.ArrivalsPoisson,
			OpenLoop: sim.OpenLoopConfig{Warmup: poissonWarmup, Steady: poissonSteady, Low: poissonLow, Steps: poissonSteps}})
		if err != nil {
			// A seed with no poisson knee leaves the row without a truth.
			return nil
		}
		rates = append(rates, truthP.Knee.RequestsPerSecond)
	}
	return rates
}

// TestSweepCoarseBeforePoisson compares roads to a poisson knee (issue
// 13's 20-minute goal), for every suite deployment whose true poisson knee
// serves at least 1 request/s:
//
//   - refined: the closed-loop search to 10% precision, its knee confirmed
//     in full, then the open-loop search from that knee's rate (the sweep
//     until 2026-12-06);
//   - coarse: the closed-loop search to a coarse precision
//     (KNEEWATCH_SWEEP_COARSE=<precision>, e.g. 0.5), then the open-loop
//     search from the rate of the bracket's upper end, the first level
//     past the knee (a coarse knee can lie far under the poisson one, and
//     the open-loop search never tries above its start);
//   - doubling (shipped): the closed loop's doubling, every level
//     screened, stopped after its first break and sweep.DefaultBreakProbes
//     refinement levels, with no confirmation, then the open-loop search
//     from the lowest broken level's rate, or the last kept level's where
//     the broken one's collapsed (sweep.OpenLoopStart).
//
// Each road's open-loop search runs with seeds 1 to poissonSeeds, as that
// many operators' sweeps; the table counts, per half of make bench-sweep
// (sweepTimeHalf), the sweeps within ±10% of the truth's median and those
// done within 20 minutes (closed loop and trials). Run by hand
// (KNEEWATCH_SWEEP_COARSE=0.5; about 2 minutes on 2 cores).
//
// On 2026-12-06 (15 deployments, 6 in half A and 9 in B, × 4 seeds),
// sweeps within ±10% of the truth and done within 20 minutes:
//
//	road                           | half A (24) | half B (36) | both (60)
//	refined                        | 20, 16      | 28, 23      | 48, 39
//	coarse 0.5                     | 19, 17      | 29, 32      | 48, 49
//	doubling, no probe             | 22, 21      | 25, 33      | 47, 54
//	doubling, one probe (shipped)  | 18, 16      | 32, 31      | 50, 47
//
// With the quick screen at concurrency 1 and 2 (measure.DefaultEarly,
// later the same day) every road's closed loop is shorter: refined 48, 44;
// coarse 48, 52; shipped 18, 18 | 32, 33 | 50, 51. With a warm-up of one
// request at concurrency 1 as well (sweep.DefaultWarmup): refined 48, 44;
// coarse 48, 53; shipped 18, 19 | 32, 33 | 50, 52.
//
// The number of probes was chosen on the detection bench's tune half, by
// what the curve they leave costs kneewatch's headroom (see
// sweep.DefaultBreakProbes), not on these halves. With seed 1 the shipped
// road finished 12 of the 15 within 20 minutes (refined: 10, no probe:
// 13): it missed with 8B/L4 chat (tight, 21m12s), 70B/H200 code (tight,
// 21m13s; loose, 23m56s). With the quick screen, 13: 8B/L4 chat tight
// 19m58s, 70B/H200 code 20m5s and 22m48s; with the shorter warm-up at
// concurrency 1 too, 14: 19m44s, 19m53s and 22m36s. Where a trial at the break level's own rate kept
// the SLO (with no probe: 70B/H200 code and chat, loose; 8B/L4 chat,
// loose), the search ended after it, 2-3% off the truth: a closed loop at
// the break level holds that many requests in flight whatever the rate, a
// Poisson stream at its rate far fewer, so that rate is no proof of a
// break under Poisson arrivals. Skipping the trial there, as if it were,
// took the no-probe road from 55 to 51 of 60 within 20 minutes (a by-hand
// variant of this test).
func TestSweepCoarseBeforePoisson(t *testing.T) {
	v := os.Getenv("KNEEWATCH_SWEEP_COARSE")
	if v == "" {
		t.Skip("set KNEEWATCH_SWEEP_COARSE=<closed-loop precision> to compare shorter roads to the poisson knee")
	}
	precision, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("KNEEWATCH_SWEEP_COARSE=%q: %v", v, err)
	}
	deps, _, err := suiteDeployments(sim.PresetNames(), workload.PresetNames())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	roads := []string{"refined", fmt.Sprintf("coarse %g", precision), "doubling (shipped)"}
	type tally struct{ ok, fast, n int }
	tallies := map[string]*tally{}
	for _, d := range deps {
		dep, ok := loadSweepDeployment(t, ctx, d)
		if !ok {
			continue
		}
		truth := poissonTruthRates(t, ctx, dep.preset, d.Workload, dep.slo)
		if len(truth) != poissonSeeds || median(truth) < 1 {
			continue
		}
		truthRate := median(truth)
		refined, err := emulateSweepAt(ctx, dep.preset, dep.gen, dep.slo, measure.DefaultEarly, sweep.DefaultPrecision, false)
		if err != nil {
			t.Fatal(err)
		}
		refined.startRate = refined.kneeRate
		coarse, err := emulateSweepAt(ctx, dep.preset, dep.gen, dep.slo, measure.DefaultEarly, precision, false)
		if err != nil {
			t.Fatal(err)
		}
		coarse.startRate = max(coarse.breakRate, coarse.kneeRate)
		doubling, err := emulateDoubling(ctx, dep.preset, dep.gen, dep.slo)
		if err != nil {
			t.Fatal(err)
		}
		half := sweepTimeHalf(d)
		line := fmt.Sprintf("%s %s/%s %s: truth %.3g req/s", half, d.Preset, d.Workload, d.Tightness, truthRate)
		for i, closed := range []emulated{refined, coarse, doubling} {
			for seed := uint64(1); seed <= poissonSeeds; seed++ {
				tr, err := emulatePoisson(ctx, dep.preset, dep.gen, dep.slo, closed.startRate, seed)
				if err != nil {
					t.Fatal(err)
				}
				total := closed.elapsed + tr.elapsed
				e := tr.rate/truthRate - 1
				for _, key := range []string{roads[i] + " " + half, roads[i]} {
					if tallies[key] == nil {
						tallies[key] = &tally{}
					}
					tl := tallies[key]
					tl.n++
					if math.Abs(e) <= 0.10 {
						tl.ok++
					}
					if total <= 20*time.Minute {
						tl.fast++
					}
				}
				if seed == 1 {
					line += fmt.Sprintf(" | %s: %.3g (%+.0f%%), closed loop %d levels %s + trials %d %s = %s", roads[i], tr.rate, 100*e,
						closed.levels, closed.elapsed.Round(time.Second), tr.trials, tr.elapsed.Round(time.Second), total.Round(time.Second))
				}
			}
		}
		t.Log(line)
	}
	for _, r := range roads {
		for _, key := range []string{r + " A", r + " B", r} {
			if tl := tallies[key]; tl != nil {
				t.Logf("%-14s within ±10%% of the truth: %d of %d sweeps; done within 20 min: %d of %d", key, tl.ok, tl.n, tl.fast, tl.n)
			}
		}
	}
}

func kneeErr(found, truth float64) float64 { return math.Abs(found-truth) / truth }

// sweepTimeSubset is the fixed subset make test runs: the deployments with
// the slowest requests at concurrency 1 among the presets (the 70B on an
// H200 with long outputs) and a fast one.
var sweepTimeSubset = []Deployment{
	{Preset: "llama-3.3-70b-fp8-h200", Workload: "code", Tightness: SLOLoose},
	{Preset: "llama-3.1-8b-h100", Workload: "chat", Tightness: SLOTight},
}

// goalSingleRequest is the request length at concurrency 1 the 10-minute
// goal is stated for ("requests of ~2 s at concurrency 1"); deployments
// with longer requests are reported, not held to it.
const goalSingleRequest = 2500 * time.Millisecond

// TestSweepTimeBench is issue 13's sweep goal, measured in virtual time:
// a closed-loop sweep as shipped (sequential stopping on) finds the knee
// within ±10% of the truth, faster than the same sweep with fixed windows
// run alongside (the peer), and within 10 minutes at real speed where a
// request at concurrency 1 takes at most goalSingleRequest. With
// -sweep.report it runs every suite deployment and writes the table.
func TestSweepTimeBench(t *testing.T) {
	if testing.Short() {
		t.Skip("knee searches in virtual time")
	}
	deps := sweepTimeSubset
	if *sweepReport != "" {
		all, _, err := suiteDeployments(sim.PresetNames(), workload.PresetNames())
		if err != nil {
			t.Fatal(err)
		}
		deps = all // every preset and workload, tight and loose
	}
	rows := runSweepTime(t, deps)
	report := sweepTimeReport(rows)
	t.Logf("\n%s", report)
	if *sweepReport != "" {
		// The full run reports; the goals are asserted on the fixed subset.
		if err := os.WriteFile(*sweepReport, []byte(sweepTimeHeader+report), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, r := range rows {
		name := fmt.Sprintf("%s/%s %s", r.dep.Preset, r.dep.Workload, r.dep.Tightness)
		if e := kneeErr(r.early.knee, r.truth); e > 0.10 {
			t.Errorf("%s: the sweep found knee %g, truth %g (%.0f%% off)", name, r.early.knee, r.truth, 100*e)
		}
		if r.early.single <= goalSingleRequest && r.early.elapsed > 10*time.Minute {
			t.Errorf("%s: the sweep took %s at real speed, want ≤ 10 min", name, r.early.elapsed.Round(time.Second))
		}
		if r.early.elapsed >= r.fixed.elapsed {
			t.Errorf("%s: sequential stopping took %s, no faster than fixed windows' %s", name, r.early.elapsed, r.fixed.elapsed)
		}
		if r.truthRate > 0 && kneeErr(r.poisson.rate, r.truthRate) > 0.10 {
			t.Errorf("%s: the poisson search found %g requests/s, truth %g", name, r.poisson.rate, r.truthRate)
		}
		if total := r.doubling.elapsed + r.poisson.elapsed; r.truthRate >= 1 && r.early.single <= goalSingleRequest && total > 20*time.Minute {
			t.Errorf("%s: the poisson sweep took %s at real speed, want ≤ 20 min", name, total.Round(time.Second))
		}
	}
}

const sweepTimeHeader = `# Sweep time: sequential stopping against fixed windows

Generated by ` + "`make bench-sweep`" + ` (TestSweepTimeBench in internal/detection/sweeptime_test.go). Every
suite deployment (simulator preset × workload preset × tight and loose SLO) is swept the way
` + "`kneewatch sweep`" + ` sweeps, closed-loop, in the simulator's virtual time: measure.Search
with the sweep's precision (10%), warm-up and window sizes, once with fixed windows and once
with sequential stopping (measure.DefaultEarly: a binomial test ends a level that clearly
breaks the SLO; a screening window of two requests per worker, 10 to 30, ends a doubling level
whose SLO quantile is within 0.8 of the thresholds, or, at concurrency 1, 2 and 4, two requests per worker
(at least 4) within 0.5, confirmed in full if the knee would rest on it). The time is the levels' virtual time, what the sweep would
spend at real speed (the preflight and the HTTP overhead are left out). The true knee is
sim.FindKnee's (integer precision, 1000-request windows).

The halves split the deployments by a hash of their name. The binomial test's settings were
fixed before either was run; the screening window's size and margin were chosen on half A
(measure.DefaultEarly says against what), so half B is the held-out one for them. The 10-minute goal is stated for requests of about 2 s at
concurrency 1; the column "with requests ≤ 2.5s" counts those.

`

func sweepTimeReport(rows []sweepTimeRow) string {
	var b strings.Builder
	b.WriteString("## Closed loop\n\n")
	b.WriteString("| half | deployment | SLO | request at c=1 | true knee | fixed: knee | fixed: levels | fixed: time | sequential: knee | sequential: levels (early, screened) | sequential: time | time ratio |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	type agg struct {
		n, within, withinFixed, under10 int
		inScope, inScopeUnder10         int
		maxTime, maxFixed               time.Duration
		ratios                          []float64
		// Poisson: deployments with a poisson knee, found within ±10%,
		// and those whose knee serves ≥ 1 request/s, within 20 min.
		pn, pWithin, pFast, pFastUnder20 int
		pMax                             time.Duration
		// pWithinSeed1: within ±10% of the truth's seed 1 alone; bias: the
		// sweep's median over the seeds against the truth's, signed;
		// spread: the truth's range over its median.
		pWithinSeed1 int
		bias, spread []float64
	}
	halves := map[string]*agg{"A": {}, "B": {}}
	for _, r := range rows {
		ratio := r.early.elapsed.Seconds() / r.fixed.elapsed.Seconds()
		fmt.Fprintf(&b, "| %s | %s/%s | %s | %s | %g | %g | %d | %s | %g | %d (%d, %d) | %s | %.2f |\n",
			r.half, r.dep.Preset, r.dep.Workload, r.dep.Tightness, r.fixed.single.Round(10*time.Millisecond), r.truth,
			r.fixed.knee, r.fixed.levels, r.fixed.elapsed.Round(time.Second),
			r.early.knee, r.early.levels, r.early.early, r.early.screened, r.early.elapsed.Round(time.Second), ratio)
		a := halves[r.half]
		a.n++
		if kneeErr(r.early.knee, r.truth) <= 0.10 {
			a.within++
		}
		if kneeErr(r.fixed.knee, r.truth) <= 0.10 {
			a.withinFixed++
		}
		if r.early.elapsed <= 10*time.Minute {
			a.under10++
		}
		if r.fixed.single <= goalSingleRequest {
			a.inScope++
			if r.early.elapsed <= 10*time.Minute {
				a.inScopeUnder10++
			}
		}
		a.maxTime = max(a.maxTime, r.early.elapsed)
		a.maxFixed = max(a.maxFixed, r.fixed.elapsed)
		a.ratios = append(a.ratios, ratio)
		if r.truthRate > 0 {
			total := r.doubling.elapsed + r.poisson.elapsed
			a.pn++
			if kneeErr(r.poisson.rate, r.truthRate) <= 0.10 {
				a.pWithin++
			}
			if kneeErr(r.poisson.rate, r.truthRates[0]) <= 0.10 {
				a.pWithinSeed1++
			}
			a.bias = append(a.bias, median(r.poissonRates)/r.truthRate-1)
			a.spread = append(a.spread, (slices.Max(r.truthRates)-slices.Min(r.truthRates))/r.truthRate)
			if r.truthRate >= 1 {
				a.pFast++
				if total <= 20*time.Minute {
					a.pFastUnder20++
				}
			}
			a.pMax = max(a.pMax, total)
		}
	}
	fmt.Fprintf(&b, "\n| half | deployments | knee within ±10%%: sequential | fixed | sequential ≤ 10 min: all | with requests ≤ %s at c=1 | longest: sequential | fixed | median time ratio |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n", goalSingleRequest)
	for _, h := range []string{"A", "B"} {
		a := halves[h]
		if a.n == 0 {
			continue
		}
		slices.Sort(a.ratios)
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d of %d | %s | %s | %.2f |\n", h, a.n, a.within, a.withinFixed, a.under10, a.inScopeUnder10, a.inScope,
			a.maxTime.Round(time.Second), a.maxFixed.Round(time.Second), a.ratios[len(a.ratios)/2])
	}
	fmt.Fprintf(&b, "\n## Poisson arrivals\n\nA sweep with Poisson arrivals (the default) runs the closed loop's doubling only, every level\n"+
		"screened, stopped at the first level that breaks the SLO (no refinement, no confirmation), then the\n"+
		"open-loop search from that level's request rate (measure.Search.StopAtBreak; sweep.runPoisson). The true\n"+
		"poisson knee is sim.FindKnee's with the detection bench's settings (5 min warm-up, 20 min steady\n"+
		"parts, 7 halvings from 0.1×), run with seeds 1 to %d: near the knee whether a run meets a bad\n"+
		"window is itself random, so each seed's bisection is one draw, and the truth here is their median,\n"+
		"the rate at which a 20-minute run breaches about half the time. \"Found\" is one sweep's (seed 1),\n"+
		"as an operator runs it, its trials judged at %.0f%% of each threshold (sweep.DefaultThresholdShare);\n"+
		"the sweep's median over the same seeds shows its bias apart from its noise. Total is the\n"+
		"doubling plus the trials (seed 1).\n\n", poissonSeeds, 100*sweep.DefaultThresholdShare)
	b.WriteString("| half | deployment | SLO | true rate (req/s): median (range over seeds) | found rate | error | found, median over seeds (range) | its error | trials | doubling: levels, time | trials' time | total |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		if r.truthRate == 0 {
			fmt.Fprintf(&b, "| %s | %s/%s | %s | no poisson knee | | | | | | | | |\n", r.half, r.dep.Preset, r.dep.Workload, r.dep.Tightness)
			continue
		}
		found := median(r.poissonRates)
		fmt.Fprintf(&b, "| %s | %s/%s | %s | %.3g (%.3g–%.3g) | %.3g | %+.0f%% | %.3g (%.3g–%.3g) | %+.0f%% | %d | %d, %s | %s | %s |\n", r.half, r.dep.Preset, r.dep.Workload, r.dep.Tightness,
			r.truthRate, slices.Min(r.truthRates), slices.Max(r.truthRates), r.poisson.rate, 100*(r.poisson.rate/r.truthRate-1),
			found, slices.Min(r.poissonRates), slices.Max(r.poissonRates), 100*(found/r.truthRate-1), r.poisson.trials,
			r.doubling.levels, r.doubling.elapsed.Round(time.Second), r.poisson.elapsed.Round(time.Second), (r.doubling.elapsed + r.poisson.elapsed).Round(time.Second))
	}
	b.WriteString("\n| half | with a poisson knee | rate within ±10% | (of the truth's seed 1 alone) | the sweep's bias: median error of its median over seeds | the truth's own spread: median range ÷ median | knee ≥ 1 req/s | of those, total ≤ 20 min | longest total |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, h := range []string{"A", "B"} {
		a := halves[h]
		if a.pn == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %+.0f%% | %.0f%% | %d | %d | %s |\n", h, a.pn, a.pWithin, a.pWithinSeed1,
			100*median(a.bias), 100*median(a.spread), a.pFast, a.pFastUnder20, a.pMax.Round(time.Second))
	}
	return b.String()
}
