package detection

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kneewatch/kneewatch/knee"
)

// TestTraceMixKnees prints, for one deployment and another workload blended
// into its traffic, the true (Poisson) knee at each share the bench's grid
// measures beside the knee kneewatch's mix model moves to for a window
// with that blend's means: where the mix model is wrong, and which way.
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
	fmt.Println("share  means (prompt/output)  true knee: in flight, req/s   model: in flight, req/s   errors")
	for _, share := range []float64{0.1, 0.2, 0.3, 0.5, 0.75, 1} {
		p, err := c.profile(ctx, dep, f[3], share, 1)
		if err != nil {
			fmt.Printf("%4.0f%%  %v\n", 100*share, err)
			continue
		}
		obs := knee.NewObservation()
		obs.InFlight = p.Knee.Concurrency
		obs.MeanPromptTokens, obs.MeanOutputTokens = p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens
		res := knee.Evaluate(obs, &prof, knee.Options{})
		fmt.Printf("%4.0f%%  %7.0f / %5.0f        %8.1f %8.3g          %8.1f %8.3g        %+4.0f%% %+4.0f%%\n",
			100*share, p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens, p.Knee.Concurrency, p.Knee.RequestsPerSecond,
			res.Knee.Concurrency, res.Knee.RequestsPerSecond,
			100*(res.Knee.Concurrency/p.Knee.Concurrency-1), 100*(res.Knee.RequestsPerSecond/p.Knee.RequestsPerSecond-1))
	}
}
