package detection

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/rules"
)

// tuneVariants are the page settings compared on the tune half when the
// defaults are chosen (rules.DefaultOptions); each is scored beside the
// shipped page, on kneewatch's headroom and on the true headroom (the
// oracle). The candidates here are the ones compared for the sustained
// headroom's longest windows and the level arm's hold.
func tuneVariants() []PageVariant {
	with := func(set func(*rules.HeadroomExhaustedOptions)) rules.HeadroomExhaustedOptions {
		o := rules.DefaultOptions().HeadroomExhausted
		set(&o)
		return o
	}
	def := rules.DefaultOptions()
	pk := &def.PastKnee
	longer := func(o *rules.HeadroomExhaustedOptions) {
		o.SustainWindows = []time.Duration{0, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 20 * time.Minute, 30 * time.Minute}
	}
	byDim := func(o *rules.HeadroomExhaustedOptions) { o.SustainByDimension = true }
	return []PageVariant{
		{Name: "D mean per dimension judged throughout", Options: with(byDim), PastKnee: pk},
		{Name: "D+W as D, windows to 30m", Options: with(func(o *rules.HeadroomExhaustedOptions) {
			byDim(o)
			longer(o)
		}), PastKnee: pk},
	}
}

// TestTunePageVariants runs the tune half with page variants and prints how
// each does on the suite's goals. It is a tool for choosing defaults, run by
// hand: KNEEWATCH_TUNE=N runs the first N tune scenarios (0: all).
func TestTunePageVariants(t *testing.T) {
	n, ok := os.LookupEnv("KNEEWATCH_TUNE")
	if !ok {
		t.Skip("set KNEEWATCH_TUNE to run the tune half with page variants")
	}
	limit, _ := strconv.Atoi(n)
	suite, err := GenerateSuite(SuiteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scs := suite.Tune
	if stride, _ := strconv.Atoi(os.Getenv("KNEEWATCH_TUNE_STRIDE")); stride > 1 {
		var picked []Scenario
		for i := 0; i < len(scs); i += stride {
			picked = append(picked, scs[i])
		}
		scs = picked
	}
	if limit > 0 && limit < len(scs) {
		scs = scs[:limit]
	}
	if os.Getenv("KNEEWATCH_TUNE_REGRESSIONS") != "" {
		// The seven scripted scenarios TestBench holds the page to.
		scs = append(Scenarios(), scs...)
	}
	rep, err := Run(context.Background(), Options{Scenarios: scs, PageVariants: tuneVariants(),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{DetectorKneewatchPage, DetectorOracle, DetectorRawBurn}
	for _, v := range tuneVariants() {
		keys = append(keys, variantDetector(v).Key, oracleVariantDetector(v).Key)
	}
	for _, k := range keys {
		tl := tallyOf(rep.Results, k)
		fmt.Printf("%-50s safe %d, safe paged %d (false pages %d, all %d over %.1f h); early %d/%d; abrupt on time %d/%d; missed %d\n",
			k, tl.safe, tl.safePaged, tl.safeFalse, tl.falsePages, tl.hours, tl.early, tl.earlyPossible, tl.onTime, tl.abrupt, tl.missed)
	}
	for _, res := range rep.Results {
		line := fmt.Sprintf("%-48s safe=%v breaches=%d", res.Scenario.Name, res.Scenario.Safe, len(res.Breaches))
		for _, k := range keys {
			s := res.score(k)
			if s == nil {
				continue
			}
			line += fmt.Sprintf(" | %s f%d", k, s.FalsePages)
			for i := range res.Breaches {
				if s.Caught[i] {
					line += fmt.Sprintf(" %+ds", int(s.Leads[i].Seconds()))
				} else {
					line += " miss"
				}
			}
		}
		fmt.Println(line)
	}
	fmt.Printf("elapsed %s\n", rep.Elapsed.Round(time.Second))
}
