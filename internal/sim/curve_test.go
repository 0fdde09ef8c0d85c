package sim

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/workload"
)

// chatSLO is the SLO the ground-truth tests use for chat on an 8B model on an
// H100: p99 TTFT ≤ 500 ms (the answer starts within half a second) and p99
// TPOT ≤ 30 ms (a stream of at least ~33 tokens/s, well above reading speed).
// With max_num_seqs 256 nothing queues up to c = 256, so TTFT stays far
// under 500 ms and TPOT is the binding threshold, as it is for real vLLM
// replicas below their batch limit.
var chatSLO = knee.SLO{TTFT: knee.Duration(500 * time.Millisecond), TPOT: knee.Duration(20 * time.Millisecond), Quantile: 0.99}

// powersOfTwo are the sweep's doubling levels.
var powersOfTwo = []int{1, 2, 4, 8, 16, 32, 64, 128, 256}

// curve runs RunLevel at each level with the same per-level seeds FindKnee
// uses (seed 1), so its points equal FindKnee's at those levels.
func curve(t *testing.T, presetName, wl string, slo knee.SLO, levels []int) []Level {
	t.Helper()
	cfg := kneeConfig(t, presetName, wl, slo, 1, 0)
	p, g := cfg.Engine.Preset, cfg.Workload
	out := make([]Level, len(levels))
	for i, c := range levels {
		lv, err := RunLevel(context.Background(), LevelConfig{
			Engine: Config{Preset: p}, Workload: g.WithSeed(levelSeed(1, c)), Concurrency: c, SLO: slo,
		})
		if err != nil {
			t.Fatalf("c=%d: %v", c, err)
		}
		out[i] = lv
	}
	return out
}

func table(levels []Level) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%5s %9s %9s %9s %9s %8s %8s %7s %8s %6s %s\n",
		"c", "tok/s", "goodput", "ttft p50", "ttft p99", "tpot p50", "tpot p99", "kv", "preempt", "req/s", "slo")
	for _, lv := range levels {
		pt := lv.Point
		fmt.Fprintf(&b, "%5.0f %9.0f %9.0f %7.1fms %7.1fms %6.2fms %6.2fms %7.3f %8.2f %6.1f %v\n",
			pt.Concurrency, pt.OutputTokensPerSecond, pt.GoodputTokensPerSecond, pt.TTFT.P50*1e3, pt.TTFT.P99*1e3,
			pt.TPOT.P50*1e3, pt.TPOT.P99*1e3, pt.KVCacheUsage, pt.PreemptionsPerSecond, pt.RequestsPerSecond, pt.MeetsSLO)
	}
	return b.String()
}

// The simulator must have a real knee: throughput climbs then flattens, tail
// latencies climb past the knee, the KV cache fills with concurrency.
func TestChatCurveOn8BH100HasARealKnee(t *testing.T) {
	levels := curve(t, "llama-3.1-8b-h100", "chat", chatSLO, powersOfTwo)
	t.Logf("llama-3.1-8b-h100, chat, SLO p99 TTFT ≤ 500ms, p99 TPOT ≤ 30ms:\n%s", table(levels))

	// The knee on this curve: the last level of the unbroken run of levels meeting the SLO.
	k := -1
	for i, lv := range levels {
		if !lv.Point.MeetsSLO {
			break
		}
		k = i
	}
	if k < 0 || k == len(levels)-1 {
		t.Fatalf("the SLO breaks at no level inside 1..256 (last good index %d): the test SLO is mis-set", k)
	}
	at := levels[k].Point
	one := levels[0].Point
	if r := at.OutputTokensPerSecond / one.OutputTokensPerSecond; r < 5 {
		t.Errorf("throughput rises only %.1f× from c=1 to the knee at c=%g, want ≥ 5×", r, at.Concurrency)
	}
	// Past the knee the curve is flat: under 10% more throughput per
	// doubling, both level to level and from the knee to each level beyond.
	for i := k + 1; i < len(levels); i++ {
		prev, cur := levels[i-1].Point, levels[i].Point
		if g := cur.OutputTokensPerSecond/prev.OutputTokensPerSecond - 1; g >= 0.10 {
			t.Errorf("c=%g→%g: throughput +%.1f%% per doubling past the knee, want < 10%%", prev.Concurrency, cur.Concurrency, 100*g)
		}
		doublings := math.Log2(cur.Concurrency / at.Concurrency)
		if g := math.Pow(cur.OutputTokensPerSecond/at.OutputTokensPerSecond, 1/doublings) - 1; g >= 0.10 {
			t.Errorf("knee c=%g→%g: +%.1f%% per doubling, want < 10%%", at.Concurrency, cur.Concurrency, 100*g)
		}
		if cur.TTFT.P99 <= prev.TTFT.P99 || cur.TPOT.P99 <= prev.TPOT.P99 {
			t.Errorf("c=%g→%g: p99 TTFT %.4f→%.4f s, p99 TPOT %.4f→%.4f s: both must rise past the knee",
				prev.Concurrency, cur.Concurrency, prev.TTFT.P99, cur.TTFT.P99, prev.TPOT.P99, cur.TPOT.P99)
		}
	}
	for i := 1; i < len(levels); i++ {
		if levels[i].Point.KVCacheUsage <= levels[i-1].Point.KVCacheUsage {
			t.Errorf("KV usage %g at c=%g does not rise from %g at c=%g", levels[i].Point.KVCacheUsage,
				levels[i].Point.Concurrency, levels[i-1].Point.KVCacheUsage, levels[i-1].Point.Concurrency)
		}
	}
	// docs/calibration.md §5.1: 8B-class on an H100 flattens beyond c≈100–150.
	// Check the shape (not the absolute level): from c=128 to c=256 the
	// throughput gains under 10%, while from c=32 to c=64 it still gains over 30%.
	byC := map[float64]knee.Point{}
	for _, lv := range levels {
		byC[lv.Point.Concurrency] = lv.Point
	}
	if g := byC[256].OutputTokensPerSecond/byC[128].OutputTokensPerSecond - 1; g >= 0.10 {
		t.Errorf("c=128→256 gains %.1f%%: the curve should be flat beyond c≈128", 100*g)
	}
	if g := byC[64].OutputTokensPerSecond/byC[32].OutputTokensPerSecond - 1; g <= 0.30 {
		t.Errorf("c=32→64 gains only %.1f%%: the curve should still climb there", 100*g)
	}
}

func TestLongContextFillsTheKVCacheAndPreempts(t *testing.T) {
	levels := curve(t, "llama-3.1-8b-h100", "long-context", chatSLO, []int{8, 64})
	t.Logf("llama-3.1-8b-h100, long-context:\n%s", table(levels))
	light, heavy := levels[0].Point, levels[1].Point
	if light.PreemptionsPerSecond != 0 {
		t.Errorf("c=8 preempted %.2f/s: 8 long requests fit in the cache", light.PreemptionsPerSecond)
	}
	if heavy.PreemptionsPerSecond <= 0 || heavy.KVCacheUsage < 0.9 {
		t.Errorf("c=64: %.2f preemptions/s, KV usage %.3f; want preemptions and a full cache", heavy.PreemptionsPerSecond, heavy.KVCacheUsage)
	}
	if heavy.Waiting <= 0 {
		t.Errorf("c=64: no requests waiting (%.1f) although the cache is full", heavy.Waiting)
	}
}

// docs/calibration.md §5.5: in a closed loop, throughput ≈ c·OSL / (TTFT + OSL·ITL),
// which published sweeps obey within 1%. With a fixed output length the
// simulator must obey it too, within 1% (it comes out 0.5% high: the
// identity counts OSL inter-token gaps where a request has OSL − 1).
func TestClosedLoopIdentityHolds(t *testing.T) {
	const osl = 200
	mix := workload.Mix{
		Name:   "fixed-200-200",
		Prompt: workload.Dist{Kind: workload.KindFixed, Value: 200},
		Output: workload.Dist{Kind: workload.KindFixed, Value: osl},
	}
	g, err := workload.NewMixGenerator(mix, "test", 1)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := LoadPreset("llama-3.1-8b-h100")
	for _, c := range []int{1, 5, 25, 50, 100, 150, 200, 250} {
		lv, err := RunLevel(context.Background(), LevelConfig{Engine: Config{Preset: p}, Workload: g, Concurrency: c, SLO: chatSLO})
		if err != nil {
			t.Fatal(err)
		}
		var ttft, itl float64
		for _, r := range lv.Window {
			tpot, _ := r.TPOT()
			ttft += r.TTFT().Seconds()
			itl += tpot.Seconds()
		}
		n := float64(len(lv.Window))
		ttft, itl = ttft/n, itl/n
		predicted := float64(c) * osl / (ttft + osl*itl)
		got := lv.Point.OutputTokensPerSecond
		t.Logf("c=%3d: %7.0f tok/s, identity %7.0f (TTFT %5.1f ms, ITL %5.2f ms), %+.2f%%", c, got, predicted, ttft*1e3, itl*1e3, 100*(got/predicted-1))
		if math.Abs(got/predicted-1) > 0.01 {
			t.Errorf("c=%d: throughput %.0f tok/s vs closed-loop identity %.0f: more than 1%% apart", c, got, predicted)
		}
	}
}
