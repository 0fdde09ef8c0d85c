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
	pk := func(below float64, hold time.Duration) *rules.PastKneeOptions {
		return &rules.PastKneeOptions{Below: below, For: hold}
	}
	shipped := rules.DefaultOptions().HeadroomExhausted
	return []PageVariant{
		{Name: "before: horizon 15m, no confirmation, no past-knee page", Options: with(func(o *rules.HeadroomExhaustedOptions) {
			o.PredictHorizon, o.PredictConfirm = 15*time.Minute, 0
		})},
		{Name: "horizon 5m, no confirmation", Options: with(func(o *rules.HeadroomExhaustedOptions) { o.PredictConfirm = 0 }), PastKnee: pk(0, 15*time.Second)},
		{Name: "no past-knee page", Options: shipped},
		{Name: "past-knee for 0s", Options: shipped, PastKnee: pk(0, 0)},
		{Name: "past-knee for 30s", Options: shipped, PastKnee: pk(0, 30*time.Second)},
		{Name: "past-knee below -0.1", Options: shipped, PastKnee: pk(-0.1, 15*time.Second)},
		{Name: "sustained over 100 requests, below 0", Options: with(func(o *rules.HeadroomExhaustedOptions) {
			o.Below, o.SustainRequests = 0, 100
		}), PastKnee: pk(0, 15*time.Second)},
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
	rep, err := Run(context.Background(), Options{Scenarios: scs, PageVariants: tuneVariants(),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{DetectorKneewatchPage, DetectorOracle, DetectorRawBurn}
	for _, v := range tuneVariants() {
		keys = append(keys, variantDetector(v).Key)
	}
	for _, k := range keys {
		tl := tallyOf(rep.Results, k)
		fmt.Printf("%-40s safe %d, safe paged %d (false pages %d, all %d over %.1f h); early %d/%d; abrupt on time %d/%d; missed %d\n",
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
