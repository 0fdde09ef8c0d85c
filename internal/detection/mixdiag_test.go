package detection

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/workload"
)

// TestTraceMixKnees prints, for one deployment and another workload blended
// into its traffic, the true (Poisson) knee at each share the bench's grid
// measures beside the knee kneewatch's mix model moves to for a window
// with that blend's means: where the mix model is wrong, and which way.
// The model is read four ways: from the means alone; as a live window
// reads it, with the prompt tail and the window's request count too; with
// the tail of the replica's history as well (up to 10 minutes, at most
// 1000 requests: collector.PromptTailHistory); and at lengths weighted by
// their size, a candidate that was not kept (see docs/simulator.md). On
// 2026-12-06 the first two differed by at most 10 points of rate error on
// 8B/L4 chat (loose) blended with code and on 8B/H100 chat (tight) with
// RAG: at 20% code and more the window holds under 100 requests and has no
// prompt p99, and where it has one (10%), 1% of ~100 requests past the
// chat mix's own p99 is not yet the evidence heavyTailGrowth asks for, or
// the means already read heavier than the tail. The history's tail took
// the L4 blend's error from +80% to +28% at 10% code and from +75% to +62%
// at 20%; the RAG blend's means already read heavier than its tail (+74%).
// The blend's knee is also read as capacity its requests share, each
// priced at the model's knee for its own lengths (sharedCapacity): the
// table in docs/simulator.md (2026-12-06) is its output.
// Run by hand: KNEEWATCH_MIXDIAG=preset/workload/tight|loose/alt, e.g.
// 8b-h100/chat/tight/rag.
//
// KNEEWATCH_MIXDIAG_QUANTILE=1 also prints the deployment's own mix's knee
// at the quantile a blend's p99 falls to when the blended-in requests never
// reach the tail (1 − 0.01 ÷ (1 − share)), and that knee's rate ÷ (1 −
// share): how much of a blend's knee the quantile shift alone explains. On
// 2026-12-04, 8B/H100 RAG tight blended with chat: 3.99, 4.55, 5.46 and 8.7
// requests/s at 10, 20, 30 and 50% chat, where the blends' true knees were
// 4.23, 4.54, 4.99 and 7.37 (the mix model read 3.14, 3.77, 4.65 and
// 7.24); 8B/L4 summarize tight blended with code: no move at all (0.0844
// requests/s at every quantile, a knee that breaks all at once), while the
// blends' knees rose 31% at 10% code. So the shift explains one family of
// blends and not the other.
func TestTraceMixKnees(t *testing.T) {
	spec, ok := os.LookupEnv("KNEEWATCH_MIXDIAG")
	if !ok {
		t.Skip("set KNEEWATCH_MIXDIAG=preset/workload/tight|loose/alt")
	}
	f := strings.Split(spec, "/")
	if len(f) != 4 {
		t.Fatalf("KNEEWATCH_MIXDIAG %q: want preset/workload/tightness/alt", spec)
	}
	ctx := context.Background()
	c := newKneeCache(Options{}.withDefaults())
	dep := Deployment{Preset: f[0], Workload: f[1], Tightness: f[2]}
	slo, err := c.slo(ctx, dep)
	if err != nil {
		t.Fatal(err)
	}
	dep.SLO = slo
	prof, err := c.profile(ctx, dep, "", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s/%s %s: SLO p99 TTFT ≤ %s, TPOT ≤ %s; knee %.1f in flight, %.3g req/s; means %.0f / %.0f\n",
		dep.Preset, dep.Workload, dep.Tightness, slo.TTFT, slo.TPOT, prof.Knee.Concurrency, prof.Knee.RequestsPerSecond,
		prof.Workload.MeanPromptTokens, prof.Workload.MeanOutputTokens)
	if m := prof.MixModel; m != nil {
		for _, p := range m.Points {
			fmt.Printf("  mix point ×%g/×%g: means %.0f / %.0f, knee %.1f in flight, %.3g req/s\n", p.PromptScale, p.OutputScale,
				p.MeanPromptTokens, p.MeanOutputTokens, p.Concurrency, p.RequestsPerSecond)
		}
	} else {
		fmt.Println("  no mix model")
	}
	if os.Getenv("KNEEWATCH_MIXDIAG_QUANTILE") != "" {
		// The blend's p99 over all requests, if the other class never
		// reaches the tail, is the own class's 1 − 0.01/(1 − share)
		// quantile: the own mix's knee at that quantile.
		for _, share := range []float64{0.1, 0.2, 0.3, 0.5} {
			d := dep
			d.SLO.Quantile = 1 - (1-slo.Quantile)/(1-share)
			p, err := c.profile(ctx, d, "", 0, 1)
			if err != nil {
				fmt.Printf("%4.0f%% q %.4f: %v\n", 100*share, d.SLO.Quantile, err)
				continue
			}
			fmt.Printf("%4.0f%% own mix at q %.4f: knee %.1f in flight, %.3g req/s (÷ (1 − share): %.3g req/s)\n", 100*share, d.SLO.Quantile,
				p.Knee.Concurrency, p.Knee.RequestsPerSecond, p.Knee.RequestsPerSecond/(1-share))
		}
	}
	preset, err := sim.LoadPreset(dep.Preset)
	if err != nil {
		t.Fatal(err)
	}
	buckets := sim.TokenBuckets(preset.MaxModelLen)
	window := Options{}.withDefaults().Window
	fmt.Println("The model read from the blend's means alone, and as a live window reads it: beside the means, the prompt p99 at")
	fmt.Println("the engine's bucket edge below it (unknown under 100 requests a window) and the requests a window holds at the")
	fmt.Println("true knee's rate, at least knee.MinMixRequests (the noise band and the heavy-tail reading). Errors in the knee's")
	fmt.Println("request rate.")
	fmt.Println("Then the live window with the prompt tail of the replica's history too: up to 10 minutes, at most 1000 requests.")
	fmt.Println("Last, the model read at lengths weighted by their size, E[x²] ÷ E[x] (the length of the request an average")
	fmt.Println("token belongs to), as a ratio to the deployment's own mix's: a blend's heavy minority weighs more there.")
	fmt.Println("Above each share, the knee as capacity the blend's requests share, each priced at the model's knee for its own")
	fmt.Println("lengths: exact, at its lengths' buckets, and from the prompt and output histograms alone.")
	seed := Options{}.withDefaults().Seed
	ownGen, err := blendGenerator(f[1], "", 0, seed)
	if err != nil {
		t.Fatal(err)
	}
	own := drawLengths(ownGen)
	fmt.Println("share  means (prompt/output)  p99 floor  true knee: in flight, req/s   means: in flight, req/s, error   live: in flight, req/s, error   with history: error   size-weighted: error")
	for _, share := range []float64{0.1, 0.2, 0.3, 0.5, 0.75, 1} {
		p, err := c.profile(ctx, dep, f[3], share, 1)
		if err != nil {
			fmt.Printf("%4.0f%%  %v\n", 100*share, err)
			continue
		}
		obs := knee.NewObservation()
		obs.InFlight = p.Knee.Concurrency
		obs.MeanPromptTokens, obs.MeanOutputTokens = p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens
		means := knee.Evaluate(obs, &prof, knee.Options{})
		gen, err := blendGenerator(f[1], f[3], share, seed)
		if err != nil {
			t.Fatal(err)
		}
		blend := drawLengths(gen)
		// The window's requests: the collector's mix history stretches
		// the means' span to MinMixRequests, but the prompt p99 is the
		// window's histogram's, unknown over fewer than 100 requests.
		if n := p.Knee.RequestsPerSecond * window.Seconds(); n >= 100 {
			obs.PromptTokensP99 = promptP99Floor(blend.prompts, buckets)
			obs.MixRequests = n
		} else {
			obs.MixRequests = max(n, knee.MinMixRequests)
		}
		live := knee.Evaluate(obs, &prof, knee.Options{})
		// The live window with the history's tail too: the prompts of up
		// to collector.MaxMixSpan, at most about a thousand of them.
		if n := min(p.Knee.RequestsPerSecond*collector.MaxMixSpan.Seconds(), 1000); n >= 100 {
			obs.SpanPromptTokensP99, obs.SpanPromptRequests = promptP99Floor(blend.prompts, buckets), n
		}
		history := knee.Evaluate(obs, &prof, knee.Options{})
		sized := knee.NewObservation()
		sized.InFlight = p.Knee.Concurrency
		sized.MeanPromptTokens = prof.Workload.MeanPromptTokens * sizeWeighted(blend.prompts) / sizeWeighted(own.prompts)
		sized.MeanOutputTokens = prof.Workload.MeanOutputTokens * sizeWeighted(blend.outputs) / sizeWeighted(own.outputs)
		bySize := knee.Evaluate(sized, &prof, knee.Options{})
		eachR, eachC := sharedCapacity(&prof, own, blend, priceEach(&prof, own, nil))
		bucketedR, _ := sharedCapacity(&prof, own, blend, priceEach(&prof, own, buckets))
		histR, _ := sharedCapacity(&prof, own, blend, priceHistograms(&prof, own, buckets))
		pct := func(v, truth float64) float64 { return 100 * (v/truth - 1) }
		fmt.Printf("      shared capacity: each request %.1f in flight (%+.0f%%), %.3g req/s (%+.0f%%); its buckets %+.0f%%; the two histograms %+.0f%%\n",
			eachC, pct(eachC, p.Knee.Concurrency), eachR, pct(eachR, p.Knee.RequestsPerSecond),
			pct(bucketedR, p.Knee.RequestsPerSecond), pct(histR, p.Knee.RequestsPerSecond))
		rateErr := func(r knee.Result) float64 { return 100 * (r.Knee.RequestsPerSecond/p.Knee.RequestsPerSecond - 1) }
		fmt.Printf("%4.0f%%  %7.0f / %5.0f        %6.0f     %8.1f %8.3g           %8.1f %8.3g %+4.0f%%          %8.1f %8.3g %+4.0f%%       %+4.0f%%               %+4.0f%%\n",
			100*share, p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens, obs.PromptTokensP99, p.Knee.Concurrency, p.Knee.RequestsPerSecond,
			means.Knee.Concurrency, means.Knee.RequestsPerSecond, rateErr(means), live.Knee.Concurrency, live.Knee.RequestsPerSecond, rateErr(live),
			rateErr(history), rateErr(bySize))
	}
}

// sharedCapacity is a blend's knee read as capacity its requests share,
// each priced at the knee the mix model gives its own lengths (see
// docs/simulator.md, where it was measured and not shipped): the knee rate
// scaled by price(own) ÷ price(blend), and the in-flight knee by Little's
// law, each request held for its own mix's knee latency (in flight ÷ rate
// at that knee).
func sharedCapacity(prof *knee.Profile, own, blend lengths, price func(lengths) (perRate, perLatency float64)) (rate, inFlight float64) {
	co, lo := price(own)
	cb, lb := price(blend)
	rate = prof.Knee.RequestsPerSecond * co / cb
	return rate, prof.Knee.Concurrency * (co / cb) * (lb / lo)
}

// priceEach prices every request at its own lengths, or at its lengths'
// buckets (1-2-5, the engine's histograms) when buckets is set: the mean
// over requests of 1 ÷ the model's knee rate, and of its in-flight ÷ rate.
// Lengths are read relative to own's means, on the profile's served scale.
func priceEach(prof *knee.Profile, own lengths, buckets []float64) func(lengths) (float64, float64) {
	scaleP, scaleO := servedScale(prof, own)
	return func(l lengths) (perRate, perLatency float64) {
		for i := range l.prompts {
			pl, ol := l.prompts[i], l.outputs[i]
			if buckets != nil {
				pl, ol = bucketMiddle(pl, buckets), bucketMiddle(ol, buckets)
			}
			c, r := prof.MixKneeFactors(scaleP*pl, scaleO*ol)
			perRate += 1 / r
			perLatency += c / r
		}
		n := float64(len(l.prompts))
		return perRate / n, perLatency / n
	}
}

// priceHistograms prices the requests from the prompt and output
// histograms alone, as a live window could, their buckets read as
// independent.
func priceHistograms(prof *knee.Profile, own lengths, buckets []float64) func(lengths) (float64, float64) {
	scaleP, scaleO := servedScale(prof, own)
	shares := func(xs []float64) []float64 {
		h := make([]float64, len(buckets)+1)
		for _, x := range xs {
			h[bucketIndex(x, buckets)] += 1 / float64(len(xs))
		}
		return h
	}
	return func(l lengths) (perRate, perLatency float64) {
		ps, os := shares(l.prompts), shares(l.outputs)
		for i, pw := range ps {
			for j, ow := range os {
				if pw == 0 || ow == 0 {
					continue
				}
				c, r := prof.MixKneeFactors(scaleP*bucketMiddleAt(i, buckets), scaleO*bucketMiddleAt(j, buckets))
				perRate += pw * ow / r
				perLatency += pw * ow * c / r
			}
		}
		return perRate, perLatency
	}
}

// servedScale is how much longer the profile's served prompts and outputs
// are than own's drawn ones, on average: drawn lengths times these are read
// on the mix model's scale.
func servedScale(prof *knee.Profile, own lengths) (prompt, output float64) {
	return prof.Workload.MeanPromptTokens / meanOf(own.prompts), prof.Workload.MeanOutputTokens / meanOf(own.outputs)
}

// bucketIndex is the index of the bucket x falls in: the first bound at or
// above it, len(buckets) past the last.
func bucketIndex(x float64, buckets []float64) int {
	i, _ := slices.BinarySearch(buckets, x)
	return i
}

// bucketMiddleAt is bucket i's geometric middle: half the first bound for
// the first, 1.5 × the last bound past it.
func bucketMiddleAt(i int, buckets []float64) float64 {
	switch {
	case i == 0:
		return buckets[0] / 2
	case i == len(buckets):
		return 1.5 * buckets[i-1]
	}
	return math.Sqrt(buckets[i-1] * buckets[i])
}

func bucketMiddle(x float64, buckets []float64) float64 {
	return bucketMiddleAt(bucketIndex(x, buckets), buckets)
}

func meanOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// lengths are the prompt and output lengths of requests drawn from a mix.
type lengths struct{ prompts, outputs []float64 }

// drawLengths draws as many requests from gen as a blend's trace holds.
func drawLengths(gen *workload.Generator) lengths {
	var l lengths
	for range blendRecords {
		r := gen.Next()
		l.prompts = append(l.prompts, float64(r.PromptTokens))
		l.outputs = append(l.outputs, float64(max(r.OutputTokens, 1)))
	}
	return l
}

// sizeWeighted is E[x²] ÷ E[x]: the mean length weighted by length.
func sizeWeighted(xs []float64) float64 {
	var s1, s2 float64
	for _, x := range xs {
		s1 += x
		s2 += x * x
	}
	return s2 / s1
}

// promptP99Floor is the 99th percentile of prompts, floored to the largest
// bucket bound below it, as the collector reads a window's prompt tail
// (promptTailFloor).
func promptP99Floor(prompts []float64, buckets []float64) float64 {
	prompts = slices.Sorted(slices.Values(prompts))
	q := knee.SampleQuantile(prompts, 0.99)
	floor := knee.Unknown()
	for _, b := range buckets {
		if b < q {
			floor = b
		}
	}
	return floor
}
