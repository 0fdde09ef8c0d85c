package collector

// sglangAdapter reads SGLang metrics (docs/upstream-metrics.md §2).
//
//   - sglang:num_retracted_reqs is a gauge of the current batch, not a
//     cumulative count, so it is SignalRetracted, never SignalPreemptions.
//   - sglang:cache_hit_rate is a ratio the engine computes; SGLang exposes
//     no prefix-cache counters.
//   - Prompt and generation token counters grow when a request finishes, so
//     their rates lag under long requests.
//   - time_per_output_token_seconds (older releases) counted one
//     observation per token, like today's inter_token_latency_seconds.
//   - With tensor or pipeline parallelism each rank may export the same
//     batch; only the lowest tp_rank/pp_rank is read (inferred from the
//     labels third parties report; not verified in SGLang source).
var sglangAdapter = specAdapter{
	name:       "sglang",
	prefixes:   []string{"sglang_"},
	modelLabel: "model_name",
	rankLabels: []string{"tp_rank", "pp_rank"},
	metrics: []metricSpec{
		{signal: SignalRunning, names: []string{"sglang:num_running_reqs"}, required: true},
		{signal: SignalWaiting, names: []string{"sglang:num_queue_reqs"}, required: true},
		{signal: SignalKVUsage, names: []string{"sglang:token_usage"}, mean: true},
		{signal: SignalKVUsedTokens, names: []string{"sglang:num_used_tokens"}},
		{signal: SignalRetracted, names: []string{"sglang:num_retracted_reqs"}},
		{signal: SignalPrefixCacheHitRate, names: []string{"sglang:cache_hit_rate"}, mean: true},
		{signal: SignalPromptTokens, names: []string{"sglang:prompt_tokens"}},
		{signal: SignalGenerationTokens, names: []string{"sglang:generation_tokens"}},
		{signal: SignalRequestsFinished, names: []string{"sglang:num_requests"}},
		{signal: SignalRequestsAborted, names: []string{"sglang:num_aborted_requests"}},
		{signal: SignalTTFT, names: []string{"sglang:time_to_first_token_seconds"}},
		{signal: SignalITL, names: []string{"sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"}},
		{signal: SignalE2E, names: []string{"sglang:e2e_request_latency_seconds"}},
		{signal: SignalQueueTime, names: []string{"sglang:queue_time_seconds"}},
		{signal: SignalPromptLength, names: []string{"sglang:prompt_tokens_histogram"},
			whenAbsent: "start SGLang with --collect-tokens-histogram to export sglang:prompt_tokens_histogram"},
		{signal: SignalMixRequests, names: []string{"sglang:prompt_tokens_histogram"}, histogramCount: true},
		{signal: SignalMixPromptTokens, names: []string{"sglang:prompt_tokens_histogram"}, histogramSum: true},
		{signal: SignalMixOutputTokens, names: []string{"sglang:generation_tokens_histogram"}, histogramSum: true},
	},
	extra:         sglangCacheConfig,
	extraFamilies: []string{sglangCacheConfigInfo},
}

// sglangCacheConfigInfo is the info-style family whose labels carry the KV
// cache layout.
const sglangCacheConfigInfo = "sglang:cache_config_info"

// sglangCacheConfig reads num_pages and page_size from the labels of
// sglang:cache_config_info, which newer releases expose (named in the
// Gateway API inference extension's protocol doc).
func sglangCacheConfig(fi familyIndex, sel selector, s *Snapshot) {
	mf := fi.find(false, sglangCacheConfigInfo)
	if mf == nil {
		return
	}
	ms := sel.series(mf, "", "")
	if len(ms) == 0 {
		return
	}
	pages, okP := infoNumber(ms[0], "num_pages")
	size, okS := infoNumber(ms[0], "page_size")
	if !okP || !okS {
		s.problem(mf.GetName(), "num_pages or page_size label missing or not a number; KV capacity is unknown")
		return
	}
	s.set(SignalKVCapacityBlocks, pages)
	s.set(SignalKVBlockSize, size)
	s.set(SignalKVCapacityTokens, pages*size)
}
