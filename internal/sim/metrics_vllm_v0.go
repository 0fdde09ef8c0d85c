package sim

import "github.com/prometheus/client_golang/prometheus"

// newVLLMV0Recorder is the vllm-v0 flavor: vLLM's V0 engine names, as older
// deployments still scrape them (docs/upstream-metrics.md §1.3). It differs from
// V1 in:
//   - labels: model_name only (no engine);
//   - KV usage as vllm:gpu_cache_usage_perc, plus the V0-only
//     num_requests_swapped, cpu_cache_usage_perc and gpu_prefix_cache_hit_rate
//     gauges (always 0 here: the simulator neither swaps nor caches prefixes);
//   - per-token latency as vllm:time_per_output_token_seconds, and no
//     per-request TPOT histogram or prefix-cache counters.
//
// Bucket edges are V1's: the late V0 releases used the same lists.
func newVLLMV0Recorder(reg prometheus.Registerer, info metricsInfo) (recorder, error) {
	return newVLLM(reg, info, true)
}
