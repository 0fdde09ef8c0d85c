package detection

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/rules"
)

// TestTraceScenarios prints, tick by tick, the truth beside kneewatch's
// evaluation for chosen generated scenarios, and when each detector fired:
// a tool for finding out why a page came early, late or falsely, run by
// hand. KNEEWATCH_TRACE=tune:12,tune:40 names scenarios by half and ID
// (KNEEWATCH_TRACE=list:tune lists a half);
// KNEEWATCH_TRACE_EVERY=N prints every Nth tick (default 6, every 30 s).
func TestTraceScenarios(t *testing.T) {
	spec, ok := os.LookupEnv("KNEEWATCH_TRACE")
	if !ok {
		t.Skip("set KNEEWATCH_TRACE=half:id,… to trace generated scenarios")
	}
	// KNEEWATCH_TUNE_SIZE as for TestTunePageVariants: a larger tune half;
	// KNEEWATCH_TRACE_SUITE_SEED draws the suite with another seed (as
	// kneewatch-bench --suite-seed does).
	size, _ := strconv.Atoi(os.Getenv("KNEEWATCH_TUNE_SIZE"))
	suiteSeed, _ := strconv.ParseUint(os.Getenv("KNEEWATCH_TRACE_SUITE_SEED"), 10, 64)
	suite, err := GenerateSuite(SuiteOptions{TuneSize: size, Seed: suiteSeed})
	if err != nil {
		t.Fatal(err)
	}
	if half, ok := strings.CutPrefix(spec, "list:"); ok {
		all, err := suite.Half(half)
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range all {
			fmt.Printf("%d\t%s\t%s\n", sc.ID, sc.Name, sc.Description)
		}
		return
	}
	var scs []Scenario
	for item := range strings.SplitSeq(spec, ",") {
		half, idText, ok := strings.Cut(strings.TrimSpace(item), ":")
		id, err := strconv.Atoi(idText)
		if !ok || err != nil {
			t.Fatalf("KNEEWATCH_TRACE item %q: want half:id, e.g. tune:12", item)
		}
		all, err := suite.Half(half)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(all, func(s Scenario) bool { return s.ID == id })
		if i < 0 {
			t.Fatalf("no scenario %d in the %s half", id, half)
		}
		scs = append(scs, all[i])
	}
	every := 6
	if n, err := strconv.Atoi(os.Getenv("KNEEWATCH_TRACE_EVERY")); err == nil && n > 0 {
		every = n
	}
	// The headroom page alone beside the shipped page (which adds
	// KneewatchPastKnee), to tell which of the two alerts paged.
	alone := PageVariant{Name: "headroom alone", Options: rules.DefaultOptions().HeadroomExhausted}
	// KNEEWATCH_TUNE_TRUTH_SEEDS as for TestTunePageVariants.
	truthSeeds := tuneTruthSeeds()
	rep, err := Run(context.Background(), Options{Scenarios: scs, PageVariants: []PageVariant{alone}, TruthGridSeeds: truthSeeds,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range rep.Results {
		sc := res.Scenario
		k := res.Profile.Knee
		fmt.Printf("\n== %d %s: %s (knee %.1f in flight, %.3g req/s, %s-bound, KV %.2f; mix model: %t)\n", sc.ID, sc.Name, sc.Description,
			k.Concurrency, res.KneeRate, k.LimitingResource, k.KVCacheUsage, res.Profile.MixModel != nil)
		for _, b := range res.Breaches {
			fmt.Printf("breach %s–%s\n", clock(b.Start), clock(b.End))
		}
		for _, key := range []string{DetectorKneewatchPage, variantDetector(alone).Key, DetectorOracle, oracleVariantDetector(alone).Key, DetectorRawBurn} {
			if s := res.score(key); s != nil {
				var pages []string
				for _, p := range s.Pages {
					pages = append(pages, clock(p))
				}
				fmt.Printf("%-40s pages at %s\n", key, strings.Join(pages, " "))
			}
		}
		// e is the measured speed (throughput efficiency) the effective-load
		// ratio ("eff") reads the knee at.
		fmt.Println("   t    load  tknee  truth   kw    load   thru    kv    eff  dim           kneeC  drift  ttft/slo tpot/slo  breached      e")
		for i, tp := range res.Truth {
			if i%every != 0 {
				continue
			}
			ev := res.Evaluations[i]
			r := ev.Ratios
			fmt.Printf("%s %6.2f %6.2f %+6.2f %+6.2f %6.2f %6.2f %6.2f %6.2f  %-13s %6.1f %+6.2f %8.2f %8.2f  %-5v %6.3f\n",
				clock(tp.At), tp.Load, tp.Knee, tp.Headroom, res.Inferred[i],
				r[knee.DimensionLoad], r[knee.DimensionThroughput], r[knee.DimensionKVCache], r[knee.DimensionEffectiveLoad],
				ev.Dimension, ev.Knee.Concurrency, ev.MixDrift, tp.TTFTP/sc.Deployment.SLO.TTFT.Seconds(), tp.TPOTP/sc.Deployment.SLO.TPOT.Seconds(), tp.Breached,
				ev.ThroughputEfficiency)
		}
	}
}
