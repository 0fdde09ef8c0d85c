package sweep

import (
	"bytes"
	"flag"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kneewatch/kneewatch/knee"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixedOutcome is a three-level sweep with a knee at 8, written by hand so
// the report's golden file does not depend on timing.
func fixedOutcome() *Outcome {
	slo := knee.SLO{TTFT: knee.Duration(500 * time.Millisecond), TPOT: knee.Duration(30 * time.Millisecond), Quantile: 0.99}
	util := 0.93
	level := func(c float64, tput, ttft, tpot, kv float64, ok bool, errs int) Level {
		pt := knee.Point{
			Concurrency: c, Requests: 200, RequestsPerSecond: tput / 180, OutputTokensPerSecond: tput, GoodputTokensPerSecond: tput,
			TTFT: knee.Quantiles{P50: ttft / 3, P99: ttft}, TPOT: knee.Quantiles{P50: tpot * 0.8, P99: tpot},
			KVCacheUsage: kv, GPUUtilization: &util, Running: c, MeetsSLO: ok, ErrorRate: float64(errs) / 200,
		}
		if !ok {
			pt.GoodputTokensPerSecond = tput / 2
			pt.Waiting = 3
			pt.PreemptionsPerSecond = 0.25
		}
		return Level{Point: pt, TTFTAtQuantile: ttft, TPOTAtQuantile: tpot, Errors: errs, Duration: 12345 * time.Millisecond,
			Margin: max(ttft/slo.TTFT.Seconds(), tpot/slo.TPOT.Seconds()), PromptMismatch: 3}
	}
	out := &Outcome{
		Target: Target{Engine: "vllm", GPU: "NVIDIA H100 80GB HBM3", Warnings: []string{"the server has no GET /v1/models, so the model name was not checked before the probe"}},
		Levels: []Level{
			level(1, 120, 0.090, 0.0084, 0.01, true, 0),
			level(2, 236, 0.095, 0.0089, 0.02, true, 0),
			level(16, 1700, 0.750, 0.0190, 0.95, false, 4),
			level(8, 900, 0.120, 0.0099, 0.50, true, 0),
		},
		Reason:   "refined: the knee is in [8, 16) (precision 0.1)",
		Started:  time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
		Finished: time.Date(2026, 5, 1, 12, 3, 21, 0, time.UTC),
	}
	out.Profile = &knee.Profile{Knee: knee.Knee{Concurrency: 8, OutputTokensPerSecond: 900, GoodputTokensPerSecond: 900, KVCacheUsage: 0.5, LimitingResource: knee.ResourceCompute}}
	return out
}

func TestReportMatchesTheGoldenFile(t *testing.T) {
	var b bytes.Buffer
	err := WriteReport(&b, fixedOutcome(), ReportInfo{
		Target: "http://10.0.0.7:8000/v1", Model: "meta-llama/Llama-3.1-8B-Instruct", Workload: "chat",
		SLO:         knee.SLO{TTFT: knee.Duration(500 * time.Millisecond), TPOT: knee.Duration(30 * time.Millisecond), Quantile: 0.99},
		ProfileFile: "profile.yaml", PlotFile: "knee.png",
	})
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/report.golden.md"
	checkGolden(t, golden, b.Bytes())
}

// fixedPoissonOutcome is fixedOutcome's doubling (1, 2, 8 kept, 16 broke;
// no refinement) followed by three Poisson trials from 16's rate: 0.2×
// and 0.6× kept, 1× broke on TTFT, and a knee moved to 0.6×.
func fixedPoissonOutcome() *Outcome {
	out := fixedOutcome()
	out.Levels[2], out.Levels[3] = out.Levels[3], out.Levels[2]
	out.Reason = "stopped after the first break: the knee is in [8, 16), about 11.7"
	closed := out.Profile.Knee
	const start = 9.44 // 16's request rate, 1700 ÷ 180 rounded
	out.ClosedLoopKnee, out.StartConcurrency, out.StartRate, out.ClosedLoopEstimate = &closed, 16, start, 11
	out.ThresholdShare = DefaultThresholdShare
	trial := func(f, inFlight float64, kept bool, breach string, judged int) Trial {
		return Trial{Rate: start * f, Fraction: f, Sent: int(start * f * 660), InFlight: inFlight, Kept: kept, Breach: breach,
			Point:     knee.Point{Concurrency: inFlight, OutputTokensPerSecond: 180 * start * f, GoodputTokensPerSecond: 170 * start * f},
			Completed: make([]Result, int(start*f*600)), TTFTAtQuantile: 0.2 + f/4, TPOTAtQuantile: 0.01 + f/100,
			Ticks: 121, Judged: judged, Steady: 10 * time.Minute, InFlightThirds: [2]float64{inFlight * 0.96, inFlight * 1.03}}
	}
	out.Trials = []Trial{
		trial(0.2, 1.4, true, "", 101),
		trial(1, 9.5, false, "p99 TTFT 1.2s > 450ms at 3m5s into the steady part (judged at 90% of the SLO's thresholds)", 121),
		trial(0.6, 4.25, true, "", 121),
	}
	out.OpenLoopReason = "after 1 halvings the SLO held at 0.6× and broke at 1× the start rate"
	out.Profile.Knee = knee.Knee{Concurrency: 4.25, OutputTokensPerSecond: 1019.5, GoodputTokensPerSecond: 962.9, KVCacheUsage: 0.3,
		LimitingResource: knee.ResourceCompute, Arrivals: knee.ArrivalsPoisson, RequestsPerSecond: 5.664, ClosedLoopConcurrency: 11}
	return out
}

// poissonReportInfo is what the Poisson reports' golden files were
// written for.
var poissonReportInfo = ReportInfo{
	Target: "http://10.0.0.7:8000/v1", Model: "meta-llama/Llama-3.1-8B-Instruct", Workload: "chat",
	SLO: knee.SLO{TTFT: knee.Duration(500 * time.Millisecond), TPOT: knee.Duration(30 * time.Millisecond), Quantile: 0.99},
}

func TestAPoissonReportShowsEachTrialAndBothKneesMatchingTheGoldenFile(t *testing.T) {
	var b bytes.Buffer
	err := WriteReport(&b, fixedPoissonOutcome(), poissonReportInfo)
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/report-poisson.golden.md"
	checkGolden(t, golden, b.Bytes())
}

// checkGolden compares a report with its golden file, rewriting the file
// under -update.
func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("report differs from %s (-want +got); rerun with -update if the change is intended:\n%s", golden, diff)
	}
}

// A sweep that searched the rate twice reports each search's best and
// which trial belongs to which search.
func TestAPoissonReportWithRepeatedSearchesMatchesTheGoldenFile(t *testing.T) {
	out := fixedPoissonOutcome()
	second := out.Trials
	for i := range second {
		second[i].Search = 1
	}
	again := slices.Clone(second)
	for i := range again {
		again[i].Search = 2
	}
	again[2].Kept, again[2].Breach = false, "p99 TPOT 41ms > 27ms at 2m into the steady part (judged at 90% of the SLO's thresholds)"
	out.Trials = append(second, again...)
	out.SearchBests = []int{2, 3} // the second search kept only 0.2×
	out.OpenLoopReason = "2 rate searches kept up to 5.664, 1.888 requests/s; the knee is the median search's"
	out.Profile.Knee.Concurrency, out.Profile.Knee.RequestsPerSecond = 1.4, 1.888
	var b bytes.Buffer
	err := WriteReport(&b, out, poissonReportInfo)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/report-poisson-searches.golden.md", b.Bytes())
}

func TestAReportListsTheKneesItsModelsWereFittedTo(t *testing.T) {
	out := fixedPoissonOutcome()
	p := *out.Profile
	p.MixModel = &knee.MixModel{
		Points: []knee.MixPoint{
			{PromptScale: 1, OutputScale: 1, MeanPromptTokens: 203, MeanOutputTokens: 184, Concurrency: 4.25, RequestsPerSecond: 5.664},
			{PromptScale: 2, OutputScale: 1, MeanPromptTokens: 405, MeanOutputTokens: 184, Concurrency: 3.1, RequestsPerSecond: 3.2},
			{PromptScale: 1, OutputScale: 2, MeanPromptTokens: 203, MeanOutputTokens: 370, Concurrency: 7.9, RequestsPerSecond: 4.8},
			{PromptScale: 0.5, OutputScale: 0.5, MeanPromptTokens: 101, MeanOutputTokens: 92, Concurrency: 3.6, RequestsPerSecond: 9.9},
		},
		Concurrency:       knee.LogQuadratic{AtProfileMix: 4.25, Prompt: -0.45, Output: 0.9},
		RequestsPerSecond: knee.LogQuadratic{AtProfileMix: 5.664, Prompt: -0.82, Output: -0.24},
	}
	p.SpeedModel = &knee.SpeedModel{Points: []knee.SpeedPoint{{Speed: 0.5, Concurrency: 3, RequestsPerSecond: 2.6}}}
	out.Profile = &p
	var b bytes.Buffer
	err := WriteReport(&b, out, poissonReportInfo)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/report-models.golden.md", b.Bytes())
}
