package detection

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/rules"
)

// TestKeepFiringForOnTheTuneHalf is the measurement behind the pages'
// keep_firing_for default (rules.DefaultOptions): the shipped page and the
// same page keeping firing 2, 5 and 10 minutes, each with the past-knee
// page keeping firing as long, on the generated suite's tune half and the
// seven regressions. The default may be chosen on this half only; the test
// half's figures are docs/benchmarks/detection.md's. It takes about 30
// minutes on 2 cores, so it runs only when KNEEWATCH_TUNE_BENCH is set, and
// logs the tallies rather than asserting them.
func TestKeepFiringForOnTheTuneHalf(t *testing.T) {
	if os.Getenv("KNEEWATCH_TUNE_BENCH") == "" {
		t.Skip("set KNEEWATCH_TUNE_BENCH to score keep_firing_for on the tune half (~30 min)")
	}
	suite, err := GenerateSuite(SuiteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tune, err := suite.Half("tune")
	if err != nil {
		t.Fatal(err)
	}
	def := rules.DefaultOptions()
	var variants []PageVariant
	for _, keep := range []time.Duration{0, 2 * time.Minute, 10 * time.Minute} {
		page, past := def.HeadroomExhausted, def.PastKnee
		page.KeepFiringFor, past.KeepFiringFor = keep, keep
		variants = append(variants, PageVariant{Name: "keep firing " + keep.String(), Options: page, PastKnee: &past})
	}
	rep, err := Run(context.Background(), Options{Scenarios: append(Scenarios(), tune...), PageVariants: variants})
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{DetectorKneewatchPage, DetectorOracle}
	for _, v := range variants {
		keys = append(keys, variantDetector(v).Key, oracleVariantDetector(v).Key)
	}
	for _, k := range keys {
		tl := tallyOf(rep.Results, k)
		t.Logf("%-45s safe scenarios paged %d of %d (false pages there %d; all false pages %d over %.1f h); early %d of %d; abrupt on time %d of %d; missed %d",
			k, tl.safePaged, tl.safe, tl.safeFalse, tl.falsePages, tl.hours, tl.early, tl.earlyPossible, tl.onTime, tl.abrupt, tl.missed)
	}
}
