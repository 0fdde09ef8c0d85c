package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
)

// kneeCase is one must-show sweep against the wall-clock simulator. Why
// this shape:
//   - The KV cache is made small (gpu_memory_utilization lowered, per
//     preset and workload) so that it fills near the knee;
//     past that, each extra request waits for a KV slot and p90 TTFT climbs
//     by a whole step per request. The thresholds were set when every
//     case's knee was 13; since the presets were calibrated (issue 13) the
//     true knees are 15 (8B/H100) and 27-28 (70B/H200), and the bound on
//     levels follows the knee (levelBound). The same searches in virtual
//     time, 40 seeds a case, stay within it
//     (TestTheSearchStaysWithinItsLevelBoundInVirtualTime). The delay a
//     loaded machine adds to wall-clock latencies must reach about a step
//     before a verdict below the knee flips; at the knee itself the margin
//     is near 1 and a few milliseconds flip it, so at real speed the bound
//     allows the refinement's worst case (wallLevelBound).
//   - The SLO is on p90 TTFT: a p99 of the default 100-request window is
//     the second-slowest request, so one scheduling hiccup of the test
//     machine (which delays every request in prefill at that moment)
//     broke it; a p90 needs a tenth of the window to be hit. TPOT is
//     left loose.
//   - Speeds were chosen so that each sweep took about 40 s of wall time
//     (5-15 s since the calibration) and the simulator streams at most a
//     few thousand tokens per wall second: its driver restarts its
//     timeline when it falls 10 ms behind, so a starved simulator loses
//     throughput and stretches every latency.
//     The short-answer workload (1500-token prompts, 64-token answers)
//     fills the KV cache while streaming little. Its prompts are not
//     longer because on the 70B preset prefill then saturates compute by
//     concurrency 8 and the sweep stops there (less than 5% more tokens/s
//     per doubling) before the KV cache fills.
//
// The thresholds are read off `kneewatch sim knee` for the same inputs
// (quantile 0.9, speed 1); docs/sweep.md has the commands.
type kneeCase struct {
	preset   string
	gmu      float64 // gpu_memory_utilization
	workload string  // a workload preset or a mix file
	ttft     time.Duration
	speed    float64
}

var kneeCases = []kneeCase{
	{"llama-3.1-8b-h100", 0.245, "testdata/short-answer.yaml", 500 * time.Millisecond, 6},
	{"llama-3.1-8b-h100", 0.27, "rag", 1350 * time.Millisecond, 12},
	{"llama-3.3-70b-fp8-h200", 0.54, "testdata/short-answer.yaml", 2300 * time.Millisecond, 18},
	{"llama-3.3-70b-fp8-h200", 0.58, "rag", 4400 * time.Millisecond, 36},
}

// sloQuantile is the TTFT quantile of every case (see kneeCase).
const sloQuantile = 0.9

func (kc kneeCase) slo() knee.SLO {
	return knee.SLO{TTFT: knee.Duration(kc.ttft), TPOT: knee.Duration(2 * time.Second), Quantile: sloQuantile}
}

func (kc kneeCase) simPreset(t *testing.T) sim.Preset {
	p, err := sim.LoadPreset(kc.preset)
	if err != nil {
		t.Fatal(err)
	}
	p.GPUMemoryUtilization = kc.gmu
	p.MaxModelLen = 16384 // what the smaller cache can hold
	return p
}

// The must-show's bounds.
const (
	kneeTolerance = 0.10 // the knee found is within ±10% of the truth
	// refineLevels bounds the probes after the doubling run has bracketed
	// the knee: the doublings themselves grow with the knee (1, 2, 4, …
	// up to the first power of two past it), so the bound on levels does
	// too (see maxLevels).
	refineLevels = 3
)

// TestSweepFindsTheSimulatorsTrueKnee is must-show 1: against the simulator
// over HTTP, the sweep's knee is within ±10% of sim.FindKnee's ground truth
// for the same preset, workload, SLO and speed, in at most wallLevelBound
// levels.
//
// When a case misses, the test says whether the simulator kept its
// timeline (see machineTrouble). A miss on a machine too loaded to run the
// simulator in real time skips in a plain `go test`, but fails under
// `make test` (KNEEWATCH_REQUIRE_TOOLS=1), which runs this package alone:
// there a skip would hide the must-show.
func TestSweepFindsTheSimulatorsTrueKnee(t *testing.T) {
	if testing.Short() {
		t.Skip("four sweeps against the simulator in wall time (about three minutes)")
	}
	table := []string{"| preset | workload | speed | true knee | found knee | levels | wall time | worst tok/s shortfall ≤ knee |", "|---|---|---:|---:|---:|---:|---:|---:|"}
	defer func() { t.Logf("\n%s", strings.Join(table, "\n")) }()
	for _, kc := range kneeCases {
		name := kc.preset + "/" + strings.TrimSuffix(filepath.Base(kc.workload), ".yaml")
		t.Run(name, func(t *testing.T) {
			p := kc.simPreset(t)
			slo := scaled(kc.slo(), kc.speed)
			truth, err := sim.FindKnee(context.Background(), sim.KneeConfig{
				Engine: sim.Config{Preset: p, Speed: kc.speed}, Workload: resolve(t, kc.workload), SLO: slo, Seed: 1,
			})
			if err != nil {
				t.Fatal(err)
			}
			st := startSimPreset(t, p, kc.speed)
			start := time.Now()
			out, err := Run(context.Background(), Config{
				Client: st.client(64), Workload: resolve(t, kc.workload), Seed: 1, SLO: slo,
				Metrics: st.metrics(100 * time.Millisecond), Logger: testLogger(t),
			})
			wall := time.Since(start)
			if out == nil {
				t.Fatal(err) // the preflight failed: nothing was measured
			}
			for _, lv := range out.Levels {
				t.Logf("c=%3g %7.1f tok/s  %s TTFT %8s  TPOT %8s  KV %.2f  preempt/s %.2f  %s",
					lv.Point.Concurrency, lv.Point.OutputTokensPerSecond, measure.QuantileLabel(slo.Quantile),
					seconds(lv.TTFTAtQuantile), seconds(lv.TPOTAtQuantile), lv.Point.KVCacheUsage, lv.Point.PreemptionsPerSecond, verdict(lv, slo))
			}
			want := truth.Knee.Concurrency
			found := math.NaN()
			if out.Profile != nil {
				found = out.Profile.Knee.Concurrency
			}
			shortfall, _ := throughputShortfall(out, truth)
			table = append(table, fmt.Sprintf("| %s | %s | %g | %g | %g | %d | %s | %.0f%% |",
				kc.preset, kc.workload, kc.speed, want, found, len(out.Levels), wall.Round(100*time.Millisecond), 100*shortfall))
			t.Logf("found knee %g in %d levels %v (%s), in %s; true knee %g", found, len(out.Levels), levelsOf(out), out.Reason, wall.Round(100*time.Millisecond), want)

			if problems := accuracyProblems(out, err, want); len(problems) > 0 {
				miss := strings.Join(problems, "; ")
				if why := machineTrouble(out, truth, slo); why != "" {
					failOrSkipForMachine(t, miss+"; but "+why)
				}
				t.Fatalf("%s, with the simulator holding its timeline (tokens/s within %.0f%% of virtual time at every level up to the true knee): the sweep is wrong",
					miss, 100*fidelityTolerance)
			}

			// Must-show 2: the written profile loads and validates.
			path := filepath.Join(t.TempDir(), "profile.yaml")
			data, err := out.Profile.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteFileAtomic(path, data); err != nil {
				t.Fatal(err)
			}
			if _, err := knee.Load(path); err != nil {
				t.Errorf("the written profile does not load: %v", err)
			}
			if got, want := out.Profile.Knee.LimitingResource, truth.Knee.LimitingResource; got != want {
				t.Errorf("limiting resource %s, the simulator's truth says %s", got, want)
			}
		})
	}
}

// accuracyProblems lists how the sweep missed must-show 1 (none when it met it).
func accuracyProblems(out *Outcome, err error, want float64) []string {
	var problems []string
	switch {
	case errors.Is(err, ErrSLOUnreachable):
		problems = append(problems, "even concurrency 1 broke the SLO")
	case err != nil:
		problems = append(problems, err.Error())
	case out.Profile == nil:
		problems = append(problems, "no profile")
	default:
		if found := out.Profile.Knee.Concurrency; math.Abs(found-want) > kneeTolerance*want {
			problems = append(problems, fmt.Sprintf("knee %g, true knee %g: off by more than %.0f%% (levels %v, %s)",
				found, want, 100*kneeTolerance, levelsOf(out), out.Reason))
		}
	}
	if limit := wallLevelBound(want); len(out.Levels) > limit {
		problems = append(problems, fmt.Sprintf("%d levels %v, want at most %d", len(out.Levels), levelsOf(out), limit))
	}
	return problems
}

// levelBound is the most levels a sweep may take to a true knee of the
// given concurrency in virtual time: maxLevels of the highest knee within
// kneeTolerance of it, since a search that finds that knee has doubled past
// it. A true knee of 15 may be found at 16, past the fourth doubling (in
// virtual time, the 8B/H100 RAG case's seed 30 took 1, 2, 4, 8, 16, 32,
// then 19, 17 and 16 confirmed in full: 9 levels).
func levelBound(trueKnee float64) int { return maxLevels(trueKnee * (1 + kneeTolerance)) }

// maxLevels is the most levels a sweep may take to a knee of the given
// concurrency: the doublings up to the first power of two past it, then
// refineLevels probes (8 for a knee of 8–15, 9 for 16–31).
func maxLevels(knee float64) int {
	doublings, _ := doublingsPast(knee)
	return doublings + refineLevels
}

// doublingsPast counts the doubling levels 1, 2, 4, … up to the first power
// of two past knee, and returns that power.
func doublingsPast(knee float64) (levels, last int) {
	levels, last = 1, 1
	for float64(last) <= knee {
		levels++
		last *= 2
	}
	return levels, last
}

// wallLevelBound is levelBound at real speed, where the machine's delays
// can flip a verdict at the knee itself: the doublings, then as many
// refinement levels as any search can be sure to need for the doubling's
// last bracket whatever its verdicts (refineWorstCase), when that is more
// than refineLevels. For [16, 32) at precision 0.1 it is 4: on 2026-12-06
// a CI run of the 70B/H200 RAG case (true knee 28) read 28 as broken at
// 1.03 of its threshold and took 25, 30, 28 and 27, 10 levels, where 3
// probes would have needed interpolation to guess right twice. The
// virtual-time test keeps levelBound: there no machine flips a verdict.
func wallLevelBound(trueKnee float64) int {
	doublings, last := doublingsPast(trueKnee * (1 + kneeTolerance))
	return doublings + max(refineLevels, refineWorstCase(last/2, last, DefaultPrecision, map[[2]int]int{}))
}

// refineWorstCase is the fewest refinement levels any search can be sure to
// close the bracket [lo, hi) in, whatever each probe's verdict: the minimax,
// over every probe, of what the worse outcome leaves. The bracket closes as
// measure.Search's does, at a width of max(1, ⌊precision × lo⌋).
func refineWorstCase(lo, hi int, precision float64, memo map[[2]int]int) int {
	if hi-lo <= max(1, int(math.Floor(precision*float64(lo)))) {
		return 0
	}
	if n, ok := memo[[2]int{lo, hi}]; ok {
		return n
	}
	best := math.MaxInt
	for p := lo + 1; p < hi; p++ {
		best = min(best, max(refineWorstCase(lo, p, precision, memo), refineWorstCase(p, hi, precision, memo)))
	}
	memo[[2]int{lo, hi}] = 1 + best
	return 1 + best
}

// fidelityTolerance bounds how far the simulator's wall-clock throughput
// may fall below its virtual-time truth at a level up to the true knee
// before a miss is put down to the machine: a starved driver restarts its
// timeline, losing engine time, and every latency stretches with it.
const fidelityTolerance = 0.10

// latencyNoiseTolerance is the share of the TTFT threshold by which the
// measured median TTFT may exceed the truth's, at a level up to the true
// knee, before a miss is put down to the machine's scheduling delays. The
// median, not the SLO quantile, because FindKnee records p50 and p99 only,
// and because a median this far off means most requests were delayed.
const latencyNoiseTolerance = 0.2

// machineTrouble says why a run on this machine cannot judge the sweep,
// or "" when the simulator held its timeline at every level up to the
// true knee (where the sweep's verdicts decide the knee).
func machineTrouble(out *Outcome, truth knee.Profile, slo knee.SLO) string {
	if short, at := throughputShortfall(out, truth); short > fidelityTolerance {
		return fmt.Sprintf("the simulator could not hold its timeline on this machine: at concurrency %g it made %.0f%% fewer tokens/s than in virtual time (limit %.0f%%), so every latency was stretched",
			at, 100*short, 100*fidelityTolerance)
	}
	for _, lv := range out.Levels {
		pt, ok := truthAt(truth, lv.Point.Concurrency)
		if !ok {
			continue
		}
		if excess := lv.Point.TTFT.P50 - pt.TTFT.P50; excess > latencyNoiseTolerance*slo.TTFT.Seconds() {
			return fmt.Sprintf("wall-clock delays on this machine were too large for this SLO: at concurrency %g median TTFT was %s above the virtual-time truth, more than %.0f%% of the %s threshold",
				pt.Concurrency, seconds(excess), 100*latencyNoiseTolerance, slo.TTFT)
		}
	}
	return ""
}

// throughputShortfall returns the largest shortfall of measured output
// tokens/s against the truth over the levels both measured up to the true
// knee, and where it was. Past the knee preemptions make a short window's
// throughput differ from a long one's for reasons that are not the machine's.
func throughputShortfall(out *Outcome, truth knee.Profile) (worst, at float64) {
	for _, lv := range out.Levels {
		pt, ok := truthAt(truth, lv.Point.Concurrency)
		if !ok || pt.OutputTokensPerSecond <= 0 {
			continue
		}
		if short := 1 - lv.Point.OutputTokensPerSecond/pt.OutputTokensPerSecond; short > worst {
			worst, at = short, pt.Concurrency
		}
	}
	return worst, at
}

// truthAt is the truth's point at concurrency c, if it measured c and c
// is not past the true knee.
func truthAt(truth knee.Profile, c float64) (knee.Point, bool) {
	for _, pt := range truth.Points {
		if pt.Concurrency == c && c <= truth.Knee.Concurrency {
			return pt, true
		}
	}
	return knee.Point{}, false
}

// failOrSkipForMachine ends a case the machine could not judge: a failure
// under `make test` (KNEEWATCH_REQUIRE_TOOLS=1), where a skip would hide
// the must-show, and a skip with the reason in a plain `go test`.
func failOrSkipForMachine(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("KNEEWATCH_REQUIRE_TOOLS") == "1" {
		t.Fatalf("%s. Under make test this fails rather than skips: run the real-time packages alone (make test runs them last, -p 1) on a machine not loaded by other work", why)
	}
	t.Skipf("%s; the run says nothing about the sweep", why)
}

func levelsOf(out *Outcome) []float64 {
	levels := make([]float64, len(out.Levels))
	for i, lv := range out.Levels {
		levels[i] = lv.Point.Concurrency
	}
	return levels
}

// TestTheWallTimeLevelBoundIsTheRefinementsWorstCase pins the bounds the
// must-show asserts: no search can promise fewer than 3 probes for [8, 16)
// or 4 for [16, 32) at precision 0.1, so a true knee of 15 (found up to 16,
// in [16, 32)) and of 27-28 may take 10 levels at real speed, against 9 in
// virtual time.
func TestTheWallTimeLevelBoundIsTheRefinementsWorstCase(t *testing.T) {
	for _, tc := range []struct{ lo, hi, want int }{{4, 8, 2}, {8, 16, 3}, {16, 32, 4}, {32, 64, 4}, {64, 128, 3}} {
		if got := refineWorstCase(tc.lo, tc.hi, DefaultPrecision, map[[2]int]int{}); got != tc.want {
			t.Errorf("refineWorstCase(%d, %d) = %d, want %d", tc.lo, tc.hi, got, tc.want)
		}
	}
	for _, tc := range []struct {
		knee            float64
		virtual, atWall int
	}{{13, 8, 8}, {15, 9, 10}, {28, 9, 10}} {
		if got, want := [2]int{levelBound(tc.knee), wallLevelBound(tc.knee)}, [2]int{tc.virtual, tc.atWall}; got != want {
			t.Errorf("true knee %g: bounds (virtual, wall) %v, want %v", tc.knee, got, want)
		}
	}
}
