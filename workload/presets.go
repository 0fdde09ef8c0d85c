package workload

import "slices"

// presets are the named request mixes. Shapes are lognormal because measured
// prompt and output lengths are right-skewed; the clamps keep the tails inside
// what an 8B serving config accepts. Means (from Dist.Mean) are noted on each.
var presets = map[string]Mix{
	// Chat: ShareGPT-like conversations. vLLM's v0.6.0 performance blog (as
	// quoted in docs/calibration.md) gives ShareGPT averages of 202
	// prompt / 179 output tokens; this mix has means of about 200 / 180.
	"chat": {
		Name:   "chat",
		Prompt: Dist{Kind: KindLognormal, Median: 133, Sigma: 0.9, Min: 4, Max: 4096},
		Output: Dist{Kind: KindLognormal, Median: 131, Sigma: 0.8, Min: 8, Max: 1024},
	},
	// RAG: a question plus retrieved passages (~2–4k tokens), a short answer.
	"rag": {
		Name:   "rag",
		Prompt: Dist{Kind: KindLognormal, Median: 2800, Sigma: 0.25, Min: 1500, Max: 4500},
		Output: Dist{Kind: KindLognormal, Median: 150, Sigma: 0.5, Min: 16, Max: 512},
	},
	// Summarize: a long document in, a few paragraphs out.
	"summarize": {
		Name:   "summarize",
		Prompt: Dist{Kind: KindLognormal, Median: 3500, Sigma: 0.5, Min: 1000, Max: 8000},
		Output: Dist{Kind: KindLognormal, Median: 300, Sigma: 0.4, Min: 64, Max: 1024},
	},
	// Code: a file or two of context, a longer generated answer.
	"code": {
		Name:   "code",
		Prompt: Dist{Kind: KindLognormal, Median: 800, Sigma: 0.7, Min: 32, Max: 4096},
		Output: Dist{Kind: KindLognormal, Median: 450, Sigma: 0.6, Min: 32, Max: 2048},
	},
	// Long context: very long prompts and long outputs, enough to fill a KV
	// cache at modest concurrency.
	"long-context": {
		Name:   "long-context",
		Prompt: Dist{Kind: KindUniform, Min: 8000, Max: 16000},
		Output: Dist{Kind: KindLognormal, Median: 1200, Sigma: 0.3, Min: 512, Max: 2048},
	},
}

// Preset returns a named mix.
func Preset(name string) (Mix, bool) {
	m, ok := presets[name]
	return m, ok
}

// PresetNames lists the named mixes, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
