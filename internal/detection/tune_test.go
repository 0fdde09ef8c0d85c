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
// oracle). These are the last candidates compared: the sustained headroom
// as a mean of each evaluation's headroom (the default before it was
// averaged per dimension), and longer sustained windows. (KneewatchPastKnee
// counted over the sustained windows instead of the evaluation window was
// tried too: it changed no page in any of the 132 tune scenarios.)
func tuneVariants() []PageVariant {
	def := rules.DefaultOptions()
	pk := &def.PastKnee
	meanHeadroom := def.HeadroomExhausted
	meanHeadroom.SustainByDimension = false
	longer := def.HeadroomExhausted
	longer.SustainWindows = []time.Duration{0, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 20 * time.Minute, 30 * time.Minute}
	return []PageVariant{
		{Name: "M mean of the headroom", Options: meanHeadroom, PastKnee: pk},
		{Name: "W windows to 30m", Options: longer, PastKnee: pk},
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
