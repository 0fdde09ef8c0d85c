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
// defaults were chosen (rules.DefaultOptions): the shipped page is the
// headroom page with a 5m horizon confirmed by the last minute's trend,
// plus KneewatchPastKnee at headroom < 0 for 15s.
func tuneVariants() []PageVariant {
	with := func(set func(*rules.HeadroomExhaustedOptions)) rules.HeadroomExhaustedOptions {
		o := rules.DefaultOptions().HeadroomExhausted
		set(&o)
		return o
	}
	pk := &rules.PastKneeOptions{Below: 0, For: 15 * time.Second}
	sustain := func(o *rules.HeadroomExhaustedOptions) { o.SustainRequests = 100 }
	levelOnly := func(hold time.Duration) func(*rules.HeadroomExhaustedOptions) {
		return func(o *rules.HeadroomExhaustedOptions) {
			o.Below, o.BelowHold, o.PredictHorizon, o.For = 0, hold, 0, 0
		}
	}
	oldTrend := func(hold time.Duration) func(*rules.HeadroomExhaustedOptions) {
		return func(o *rules.HeadroomExhaustedOptions) {
			levelOnly(30 * time.Second)(o)
			sustain(o)
			o.PredictBelow, o.PredictLookback, o.PredictHorizon, o.PredictHold = 0.6, 5*time.Minute, 15*time.Minute, hold
		}
	}
	return []PageVariant{
		{Name: "E B+trend 2m/5m held 4m", Options: with(func(o *rules.HeadroomExhaustedOptions) {
			levelOnly(30 * time.Second)(o)
			sustain(o)
			o.PredictBelow, o.PredictLookback, o.PredictHorizon, o.PredictHold = 0.5, 2*time.Minute, 5*time.Minute, 4*time.Minute
		}), PastKnee: pk},
		{Name: "H B+trend 5m/15m held 6m", Options: with(oldTrend(6 * time.Minute)), PastKnee: pk},
		{Name: "I B+trend 5m/15m held 7m", Options: with(oldTrend(7 * time.Minute)), PastKnee: pk},
		{Name: "J B+trend 3m/10m held 5m", Options: with(func(o *rules.HeadroomExhaustedOptions) {
			levelOnly(30 * time.Second)(o)
			sustain(o)
			o.PredictBelow, o.PredictLookback, o.PredictHorizon, o.PredictHold = 0.6, 3*time.Minute, 10*time.Minute, 5*time.Minute
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
