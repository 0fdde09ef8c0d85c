package detection

import (
	"context"
	"fmt"
	"time"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/workload"
)

// SLO tightness of a generated deployment: its thresholds are set from the
// replica's own latency at concurrency 1 (see deriveSLO), so they stay
// meaningful however the presets are calibrated.
const (
	SLOTight = "tight"
	SLOLoose = "loose"
)

// minKVRequests is the fewest requests of a mix's mean length a preset's KV
// cache must hold to serve it: with fewer, the knee is a request or two in
// flight and its rate so low (long-context on the 8B L4: ~0.02 requests/s)
// that the 100 requests a p99 needs take over an hour to arrive, longer
// than a scenario.
const minKVRequests = 4

// suiteDeployments is every preset × workload the presets can serve, each
// with a tight and a loose SLO, and the pairs skipped with the reason.
func suiteDeployments(presets, workloads []string) ([]Deployment, []string, error) {
	var deps []Deployment
	var skipped []string
	for _, pn := range presets {
		p, err := sim.LoadPreset(pn)
		if err != nil {
			return nil, nil, err
		}
		kvTokens := float64(p.KVBlocks() * p.BlockSize)
		for _, wn := range workloads {
			m, ok := workload.Preset(wn)
			if !ok {
				return nil, nil, fmt.Errorf("unknown workload %q (known: %v)", wn, workload.PresetNames())
			}
			perRequest := min(m.MeanPromptTokens()+m.MeanOutputTokens(), float64(p.MaxModelLen))
			if fit := kvTokens / perRequest; fit < minKVRequests {
				skipped = append(skipped, fmt.Sprintf("%s × %s: its KV cache holds %.1f requests of %.0f tokens (under %d)",
					pn, wn, fit, perRequest, minKVRequests))
				continue
			}
			for _, t := range []string{SLOTight, SLOLoose} {
				deps = append(deps, Deployment{Preset: pn, Workload: wn, Tightness: t})
			}
		}
	}
	if len(deps) == 0 {
		return nil, skipped, fmt.Errorf("no preset can serve any of the workloads %v", workloads)
	}
	return deps, skipped, nil
}

// sloMultiples are, per tightness, how many times the replica's p99 TTFT and
// TPOT at concurrency 1 its SLO allows, before rounding up to a vLLM bucket
// edge. Prompt-heavy mixes get more TPOT room: their long prefills share
// steps with decodes, so TPOT climbs with the first few requests in flight,
// and an SLO at 2.5× a lone request's would put the knee at 1–2 requests.
var sloMultiples = map[string]struct{ ttft, tpot, tpotPrefillHeavy float64 }{
	SLOTight: {ttft: 4, tpot: 2.5, tpotPrefillHeavy: 6},
	SLOLoose: {ttft: 10, tpot: 5, tpotPrefillHeavy: 12},
}

// prefillHeavy reports whether a mix's prompts are many times its outputs.
func prefillHeavy(m workload.Mix) bool { return m.MeanPromptTokens() >= 5*m.MeanOutputTokens() }

// deriveSLO sets a deployment's SLO from its replica's latency alone at
// concurrency 1, each threshold the smallest vLLM bucket edge at or above
// the tightness's multiple of it (a histogram burn-rate SLI needs an edge).
func deriveSLO(ctx context.Context, dep Deployment) (knee.SLO, error) {
	mult, ok := sloMultiples[dep.Tightness]
	if !ok {
		return knee.SLO{}, fmt.Errorf("deployment %s/%s: unknown SLO tightness %q (known: %s, %s)", dep.Preset, dep.Workload, dep.Tightness, SLOTight, SLOLoose)
	}
	p, err := sim.LoadPreset(dep.Preset)
	if err != nil {
		return knee.SLO{}, err
	}
	m, ok := workload.Preset(dep.Workload)
	if !ok {
		return knee.SLO{}, fmt.Errorf("unknown workload %q (known: %v)", dep.Workload, workload.PresetNames())
	}
	gen, err := workload.NewMixGenerator(m, dep.Workload, 1)
	if err != nil {
		return knee.SLO{}, err
	}
	lax := knee.SLO{TTFT: knee.Duration(time.Hour), TPOT: knee.Duration(time.Hour), Quantile: 0.99}
	lv, err := sim.RunLevel(ctx, sim.LevelConfig{Engine: sim.Config{Preset: p}, Workload: gen, Concurrency: 1, SLO: lax})
	if err != nil {
		return knee.SLO{}, fmt.Errorf("latency of %s/%s at concurrency 1: %w", dep.Preset, dep.Workload, err)
	}
	tpotMult := mult.tpot
	if prefillHeavy(m) {
		tpotMult = mult.tpotPrefillHeavy
	}
	ttft, err := edgeAtLeast(vllmTTFTBuckets, mult.ttft*lv.Point.TTFT.P99, "TTFT")
	if err != nil {
		return knee.SLO{}, err
	}
	tpot, err := edgeAtLeast(vllmTPOTBuckets, tpotMult*lv.Point.TPOT.P99, "TPOT")
	if err != nil {
		return knee.SLO{}, err
	}
	return knee.SLO{TTFT: knee.Duration(seconds(ttft)), TPOT: knee.Duration(seconds(tpot)), Quantile: 0.99}, nil
}

// edgeAtLeast is the smallest bucket edge ≥ v.
func edgeAtLeast(edges []float64, v float64, what string) (float64, error) {
	for _, e := range edges {
		if e >= v {
			return e, nil
		}
	}
	return 0, fmt.Errorf("no vLLM %s bucket edge is ≥ %.3gs", what, v)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
