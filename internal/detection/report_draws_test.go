package detection

import (
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

func TestDrawsReportPoolsTheFreshDrawsApartFromTheCheckedOne(t *testing.T) {
	result := func(family, workload string, safe bool, falsePages int, errs ...float64) *ScenarioResult {
		return &ScenarioResult{
			Scenario: &Scenario{ID: 100 + len(errs), Name: family + " " + workload, Description: "what happens",
				Family: family, Safe: safe, Duration: time.Hour,
				Deployment: Deployment{Preset: "llama-3.1-8b-l4", Workload: workload, Tightness: SLOLoose,
					SLO: knee.SLO{Quantile: 0.99, TTFT: knee.Duration(5 * time.Second), TPOT: knee.Duration(300 * time.Millisecond)}}},
			Profile:  knee.Profile{Knee: knee.Knee{Concurrency: 4, RequestsPerSecond: 0.3}},
			KneeRate: 0.3,
			Scores: []DetectorScore{
				{Detector: Detector{Key: DetectorKneewatchPage}, FalsePages: falsePages},
				{Detector: Detector{Key: DetectorOracle}},
			},
			HeadroomErrors: errs,
			Headroom:       HeadroomError{Mean: statsOf(errs).mean, P95: statsOf(errs).p95},
			// Every compared scrape read low, far from the knee.
			HeadroomCompared: func() []ComparedHeadroom {
				var out []ComparedHeadroom
				for _, e := range errs {
					out = append(out, ComparedHeadroom{Inferred: 0.9 - e, Truth: 0.9})
				}
				return out
			}(),
		}
	}
	draw := func(seed uint64, rs ...*ScenarioResult) SuiteDraw {
		return SuiteDraw{Seed: seed, Report: &Report{Results: rs}}
	}
	d := &DrawsReport{Half: HalfTest, Checked: []uint64{1}, Elapsed: time.Minute, Draws: []SuiteDraw{
		// The checked draw reads well and is left out of the fresh pool.
		draw(1, result(FamilyMixRamp, "chat", false, 0, 0.01, 0.02), result(FamilyPlateauSafe, "rag", true, 0, 0.01)),
		draw(2, result(FamilyMixRamp, "chat", false, 0, 0.3, 0.3), result(FamilyPlateauSafe, "rag", true, 1, 0.02)),
		draw(3, result(FamilyMixRamp, "code", false, 0, 0.05, 0.05), result(FamilyPlateauSafe, "rag", true, 0, 0.02)),
	}}
	var b strings.Builder
	if err := d.Markdown(&b, "make bench-detection-draws"); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"drawn with 3 seeds (1, 2, 3): 6 scenarios",
		"| 1 (checked) | 2 | 0 of 1 (0) |",
		"| 2 | 2 | 1 of 1 (0) |",
		"| fresh draws pooled | 4 | 1 of 2 (0) |",
		"| all draws pooled | 6 | 1 of 3 (0) |",
		// Per family: each draw's p95, how many draws were over the goal,
		// and the fresh draws pooled (0.05, 0.05, 0.3, 0.3: p95 0.3).
		"| mix-ramp | 0.019 | 0.300 | 0.050 | 1 of 3 | 0.175 / 0.300 / 0.300 | 100%, 100% | — |",
		"| ramp-slow | — | — | — | 0 of 3 | — | — | — | — | — |",
		// The worst deployment over the fresh draws comes first.
		"| 8b-l4 chat loose | p99 TTFT ≤ 5s, TPOT ≤ 300ms | 4.0 (0.3) | 1 | 2 | 0.300 / 0.300 / 0.300 | 100%, 100% |",
		// The worst scenario of the fresh draws, with its suite seed.
		"| 2 | 102 | mix-ramp chat | what happens | quiet | quiet | 0.300 / 0.300 | 100%, 100% |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the draws report lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(md, "| 8b-l4 chat loose |") > strings.Index(md, "| 8b-l4 code loose |") {
		t.Errorf("the deployments are not ranked by their fresh p95:\n%s", md)
	}
	if !strings.Contains(md, "The draw with suite seed 1 is the committed report's") {
		t.Errorf("the test half's report does not say which draw is the committed one:\n%s", md)
	}
	d.Half = HalfTune
	b.Reset()
	if err := d.Markdown(&b, "kneewatch-bench --suite tune --suite-seeds 1,2,3"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Defaults were chosen on the tune half of the draw with suite seed 1") {
		t.Errorf("the tune half's report does not say defaults were chosen on its checked draw:\n%s", b.String())
	}
	if strings.Contains(md, "| 1 | 102 |") {
		t.Errorf("the worst scenarios list one of the checked draw's:\n%s", md)
	}
}
