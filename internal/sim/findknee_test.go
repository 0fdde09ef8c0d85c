package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/workload"
)

// fixedClock makes the profile's wall-clock stamps reproducible.
func fixedClock() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }

// kneeConfig is a FindKnee config for a preset and workload preset, seed 1,
// with the wall-clock stamps fixed.
func kneeConfig(t *testing.T, presetName, wl string, slo knee.SLO, speed float64, maxC int) KneeConfig {
	t.Helper()
	p, err := LoadPreset(presetName)
	if err != nil {
		t.Fatal(err)
	}
	g, err := workload.Resolve(wl, 1)
	if err != nil {
		t.Fatal(err)
	}
	return KneeConfig{Engine: Config{Preset: p, Speed: speed}, Workload: g, SLO: slo, MaxConcurrency: maxC, Seed: 1, Clock: fixedClock}
}

func findKnee(t *testing.T, presetName, wl string, slo knee.SLO, speed float64, maxC int) knee.Profile {
	t.Helper()
	prof, err := FindKnee(context.Background(), kneeConfig(t, presetName, wl, slo, speed, maxC))
	if err != nil {
		t.Fatal(err)
	}
	// What the simulator writes must load as a valid profile.
	if err := prof.Validate(); err != nil {
		t.Fatalf("%s/%s: the profile does not validate:\n%v", presetName, wl, err)
	}
	return prof
}

func pointAt(t *testing.T, prof knee.Profile, c float64) knee.Point {
	t.Helper()
	for _, pt := range prof.Points {
		if pt.Concurrency == c {
			return pt
		}
	}
	t.Fatalf("no point at concurrency %g (levels %v)", c, prof.Sweep.Levels)
	return knee.Point{}
}

func TestFindKneeIsDeterministicAndBracketsTheBreak(t *testing.T) {
	if testing.Short() {
		t.Skip("two full knee searches (about two seconds)")
	}
	first := findKnee(t, "llama-3.1-8b-h100", "chat", chatSLO, 1, 256)
	second := findKnee(t, "llama-3.1-8b-h100", "chat", chatSLO, 1, 256)
	if diff := cmp.Diff(first, second); diff != "" {
		t.Fatalf("same inputs, different profiles (-first +second):\n%s", diff)
	}
	k := first.Knee.Concurrency
	t.Logf("knee c=%g: %.0f tok/s, goodput %.0f, KV %.3f, limited by %s; levels %v",
		k, first.Knee.OutputTokensPerSecond, first.Knee.GoodputTokensPerSecond, first.Knee.KVCacheUsage, first.Knee.LimitingResource, first.Sweep.Levels)

	// The knee meets both SLO percentiles; one more client breaks one of them.
	at, next := pointAt(t, first, k), pointAt(t, first, k+1)
	if !at.MeetsSLO || at.TTFT.P99 > chatSLO.TTFT.Seconds() || at.TPOT.P99 > chatSLO.TPOT.Seconds() {
		t.Errorf("knee c=%g does not meet the SLO: %+v", k, at)
	}
	if next.MeetsSLO || (next.TTFT.P99 <= chatSLO.TTFT.Seconds() && next.TPOT.P99 <= chatSLO.TPOT.Seconds()) {
		t.Errorf("c=%g past the knee still meets the SLO: %+v", k+1, next)
	}
	// The knee lies where the doubling curve breaks: between its last good
	// and first bad level, and those levels are the curve's own points.
	levels := curve(t, "llama-3.1-8b-h100", "chat", chatSLO, powersOfTwo)
	lastGood, firstBad := 0.0, 0.0
	for _, lv := range levels {
		if diff := cmp.Diff(lv.Point, pointAt(t, first, lv.Point.Concurrency)); diff != "" {
			t.Errorf("c=%g: FindKnee's point differs from RunLevel's (-curve +profile):\n%s", lv.Point.Concurrency, diff)
		}
		if lv.Point.MeetsSLO && firstBad == 0 {
			lastGood = lv.Point.Concurrency
		} else if firstBad == 0 {
			firstBad = lv.Point.Concurrency
		}
	}
	if k < lastGood || k >= firstBad {
		t.Errorf("knee %g outside the curve's break [%g, %g)", k, lastGood, firstBad)
	}
	if first.Knee.LimitingResource != knee.ResourceCompute {
		t.Errorf("chat on 8B/H100 is limited by %s, want compute (KV %.3f)", first.Knee.LimitingResource, first.Knee.KVCacheUsage)
	}
	if first.Metadata.Partial {
		t.Error("profile marked partial although the SLO broke inside the sweep")
	}
}

func TestProfileDescribesTheRun(t *testing.T) {
	prof := findKnee(t, "llama-3.1-8b-h100", "chat", chatSLO, 1, 32)
	got := struct {
		APIVersion, Kind, Name, Model, GPU, Tool, Target, Source string
		MeanPrompt                                               int
	}{prof.APIVersion, prof.Kind, prof.Metadata.Name, prof.Match.Model, prof.Match.GPU, prof.Sweep.Tool,
		prof.Sweep.Target, prof.Workload.Source, int(prof.Workload.MeanPromptTokens)}
	want := struct {
		APIVersion, Kind, Name, Model, GPU, Tool, Target, Source string
		MeanPrompt                                               int
	}{"kneewatch.dev/v1", "KneeProfile", "llama-3.1-8b-h100-chat", "meta-llama/Llama-3.1-8B-Instruct",
		"NVIDIA H100 80GB HBM3", "kneewatch sim knee", "llama-3.1-8b-h100", "chat", 199}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("profile header (-want +got):\n%s", diff)
	}
	// Every level up to 32 meets the chat SLO: the knee is the sweep's
	// ceiling, so the profile says it may be a lower bound.
	if !prof.Metadata.Partial || prof.Knee.Concurrency != 32 {
		t.Errorf("max concurrency 32: knee %g, partial %v; want 32 and partial", prof.Knee.Concurrency, prof.Metadata.Partial)
	}
	if diff := cmp.Diff([]int{1, 2, 4, 8, 16, 32}, prof.Sweep.Levels); diff != "" {
		t.Errorf("levels (-want +got):\n%s", diff)
	}
	for i := 1; i < len(prof.Points); i++ {
		if prof.Points[i].Concurrency <= prof.Points[i-1].Concurrency {
			t.Errorf("points not sorted by concurrency: %g after %g", prof.Points[i].Concurrency, prof.Points[i-1].Concurrency)
		}
	}
}

// --speed K divides every latency by K, so the knee under SLOs divided by K
// is the knee at speed 1 under the original SLOs, with K times the throughput.
func TestSpeedScalesLatenciesNotTheKnee(t *testing.T) {
	if testing.Short() {
		t.Skip("two knee searches")
	}
	slo := knee.SLO{TTFT: knee.Duration(2 * time.Second), TPOT: knee.Duration(60 * time.Millisecond), Quantile: 0.99}
	fast := knee.SLO{TTFT: slo.TTFT / 4, TPOT: slo.TPOT / 4, Quantile: 0.99}
	base := findKnee(t, "llama-3.3-70b-fp8-h200", "chat", slo, 1, 256)
	sped := findKnee(t, "llama-3.3-70b-fp8-h200", "chat", fast, 4, 256)
	if base.Knee.Concurrency != sped.Knee.Concurrency {
		t.Errorf("knee %g at speed 1, %g at speed 4 with SLOs/4: want equal", base.Knee.Concurrency, sped.Knee.Concurrency)
	}
	if r := sped.Knee.OutputTokensPerSecond / base.Knee.OutputTokensPerSecond; r < 3.99 || r > 4.01 {
		t.Errorf("throughput at speed 4 is %.3f× speed 1, want 4×", r)
	}
	t.Logf("70B/H200 chat knee: c=%g at speed 1 (%.0f tok/s) and c=%g at speed 4 (%.0f tok/s)",
		base.Knee.Concurrency, base.Knee.OutputTokensPerSecond, sped.Knee.Concurrency, sped.Knee.OutputTokensPerSecond)
}

func TestLongContextKneeIsLimitedByTheKVCache(t *testing.T) {
	if testing.Short() {
		t.Skip("a knee search over 1000-token outputs (about three seconds)")
	}
	slo := knee.SLO{TTFT: knee.Duration(2 * time.Second), TPOT: knee.Duration(60 * time.Millisecond), Quantile: 0.99}
	prof := findKnee(t, "llama-3.1-8b-h100", "long-context", slo, 1, 256)
	t.Logf("long-context knee: c=%g, KV %.3f, %.2f preemptions/s, %s", prof.Knee.Concurrency, prof.Knee.KVCacheUsage,
		pointAt(t, prof, prof.Knee.Concurrency).PreemptionsPerSecond, prof.Knee.LimitingResource)
	if prof.Knee.LimitingResource != knee.ResourceKVCache {
		t.Errorf("long-context knee limited by %s (KV %.3f), want kv_cache", prof.Knee.LimitingResource, prof.Knee.KVCacheUsage)
	}
}

func TestFindKneeReportsAnSLONoLevelMeets(t *testing.T) {
	p, _ := LoadPreset("llama-3.1-8b-l4")
	g, _ := workload.Resolve("chat", 1)
	tight := knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(10 * time.Millisecond), Quantile: 0.99}
	prof, err := FindKnee(context.Background(), KneeConfig{Engine: Config{Preset: p}, Workload: g, SLO: tight, Seed: 1, Clock: fixedClock})
	if !errors.Is(err, ErrSLOUnreachable) {
		t.Fatalf("got %v, want ErrSLOUnreachable", err)
	}
	want := "the SLO is not met even at concurrency 1: p99 TTFT 0.422s (SLO 1s), p99 TPOT 0.0592s (SLO 10ms)"
	if err.Error() != want {
		t.Errorf("error:\n got %s\nwant %s", err, want)
	}
	if len(prof.Points) != 2 || prof.Knee.Concurrency != 0 {
		t.Errorf("want the measured points (c=1 and the one past it) and no knee, got %d points, knee %g", len(prof.Points), prof.Knee.Concurrency)
	}
}
