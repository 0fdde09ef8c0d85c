package sweep

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/measure"
)

// TestTheSearchStaysWithinItsLevelBoundInVirtualTime runs the sweep's own
// search (measure.Search with the sweep's precision, windows, warm-ups,
// early stopping and level seeds) for every case of
// TestSweepFindsTheSimulatorsTrueKnee in virtual time, with 40 seeds: the
// knee within ±10% of the truth in at most levelBound levels, every time.
// That test runs at real speed, where a loaded machine shifts latencies and
// can flip a verdict at the knee, and one more probe follows, so it allows
// the refinement's worst case (wallLevelBound); this one has no machine in
// it, so it holds the search to the tighter levelBound, and a miss here is
// the search's. On 2026-12-06 two real-speed runs of the 70B/H200 cases
// took 10 levels and found a knee within ±10% (the RAG case 27 of 28);
// here the short-answer case took 8
// levels with 37 of the 40 seeds and 9 with 3. This test also found the
// bound too tight where a knee within tolerance lies past a power of two
// (see levelBound).
func TestTheSearchStaysWithinItsLevelBoundInVirtualTime(t *testing.T) {
	const seeds = 40
	for _, kc := range kneeCases {
		name := kc.preset + "/" + strings.TrimSuffix(strings.TrimPrefix(kc.workload, "testdata/"), ".yaml")
		t.Run(name, func(t *testing.T) {
			p := kc.simPreset(t)
			slo := scaled(kc.slo(), kc.speed)
			gen := resolve(t, kc.workload)
			truth, err := sim.FindKnee(context.Background(), sim.KneeConfig{
				Engine: sim.Config{Preset: p, Speed: kc.speed}, Workload: gen, SLO: slo, Seed: 1,
			})
			if err != nil {
				t.Fatal(err)
			}
			want := truth.Knee.Concurrency
			levels := map[int]int{}
			for seed := uint64(1); seed <= seeds; seed++ {
				search, err := measure.NewSearch(DefaultMaxConcurrency, DefaultPrecision, 0)
				if err != nil {
					t.Fatal(err)
				}
				seq, _, err := sim.DriveSearch(context.Background(), search, func(step measure.Step) sim.LevelConfig {
					c := step.Concurrency
					return sim.LevelConfig{
						Engine: sim.Config{Preset: p, Speed: kc.speed}, Workload: gen.WithSeed(levelSeed(seed, c)), SLO: slo,
						WarmupRequests: DefaultWarmup(c), WindowRequests: WindowRequests(c, DefaultMinRequests(slo.Quantile)),
						Early: measure.DefaultEarly, MayScreen: step.MayScreen,
					}
				})
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				levels[len(seq)]++
				found, _ := search.Bracket()
				if math.Abs(float64(found)-want) > kneeTolerance*want {
					t.Errorf("seed %d: knee %d, true knee %g: off by more than %.0f%% (levels %v, %s)", seed, found, want, 100*kneeTolerance, seq, search.Done())
				}
				if limit := levelBound(want); len(seq) > limit {
					t.Errorf("seed %d: %d levels %v, want at most %d (%s)", seed, len(seq), seq, limit, search.Done())
				}
			}
			t.Logf("true knee %g; levels taken over %d seeds (levels: seeds): %v", want, seeds, levels)
		})
	}
}
