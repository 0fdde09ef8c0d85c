package collector

// vllmAdapter reads vLLM V1 and V0 metrics (docs/upstream-metrics.md §1).
//
//   - Names are tried newest first: kv_cache_usage_perc (0.9+) before
//     gpu_cache_usage_perc (V0, deprecated 0.9); inter_token_latency_seconds
//     (0.11+) before time_per_output_token_seconds (V0 and V1 ≤ 0.12, also
//     one observation per token); prefix_cache_* before gpu_prefix_cache_*.
//   - Counters are found with or without _total, and the colon-free
//     spelling (vllm_num_requests_running) is the same name.
//   - Data-parallel engines (the engine label) are summed, except KV usage,
//     which is averaged as vLLM's own logger does.
//   - request_success counts every finished_reason including abort, so it
//     is the finished count; the abort series is read on its own.
//   - KV capacity comes only from the labels of vllm:cache_config_info.
var vllmAdapter = specAdapter{
	name:       "vllm",
	prefixes:   []string{"vllm_"},
	modelLabel: "model_name",
	metrics: []metricSpec{
		{signal: SignalRunning, names: []string{"vllm:num_requests_running"}, required: true},
		{signal: SignalWaiting, names: []string{"vllm:num_requests_waiting"}, required: true},
		{signal: SignalKVUsage, names: []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}, mean: true},
		{signal: SignalPreemptions, names: []string{"vllm:num_preemptions"}},
		{signal: SignalPromptTokens, names: []string{"vllm:prompt_tokens"}},
		{signal: SignalGenerationTokens, names: []string{"vllm:generation_tokens"}},
		{signal: SignalRequestsFinished, names: []string{"vllm:request_success"}},
		{signal: SignalRequestsAborted, names: []string{"vllm:request_success"}, matchLabel: "finished_reason", matchValue: "abort"},
		{signal: SignalPrefixCacheQueries, names: []string{"vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries"}},
		{signal: SignalPrefixCacheHits, names: []string{"vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits"}},
		{signal: SignalTTFT, names: []string{"vllm:time_to_first_token_seconds"}},
		{signal: SignalTPOT, names: []string{"vllm:request_time_per_output_token_seconds"}},
		{signal: SignalITL, names: []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}},
		{signal: SignalE2E, names: []string{"vllm:e2e_request_latency_seconds"}},
		{signal: SignalQueueTime, names: []string{"vllm:request_queue_time_seconds"}},
		{signal: SignalPromptLength, names: []string{"vllm:request_prompt_tokens"}},
		{signal: SignalMixRequests, names: []string{"vllm:request_prompt_tokens"}, histogramCount: true},
		{signal: SignalMixPromptTokens, names: []string{"vllm:request_prompt_tokens"}, histogramSum: true},
		{signal: SignalMixOutputTokens, names: []string{"vllm:request_generation_tokens"}, histogramSum: true},
	},
	extra:         vllmCacheConfig,
	extraFamilies: []string{vllmCacheConfigInfo},
}

// vllmCacheConfigInfo is the info-style family whose labels carry the KV
// cache layout.
const vllmCacheConfigInfo = "vllm:cache_config_info"

// vllmCacheConfig reads num_gpu_blocks and block_size from the labels of
// the info-style vllm:cache_config_info (value 1, one series per engine).
// Each data-parallel engine has its own KV pool, so blocks are summed.
func vllmCacheConfig(fi familyIndex, sel selector, s *Snapshot) {
	mf := fi.find(false, vllmCacheConfigInfo)
	if mf == nil {
		return
	}
	name := mf.GetName()
	var blocks, blockSize float64
	for i, m := range sel.series(mf, "", "") {
		b, okB := infoNumber(m, "num_gpu_blocks")
		bs, okS := infoNumber(m, "block_size")
		if !okB || !okS {
			s.problem(name, "num_gpu_blocks or block_size label missing or not a number; KV capacity is unknown")
			return
		}
		if i > 0 && bs != blockSize {
			s.problem(name, "engines report different block_size (%v and %v); KV capacity is unknown", blockSize, bs)
			return
		}
		blocks += b
		blockSize = bs
	}
	if blockSize == 0 {
		return
	}
	s.set(SignalKVCapacityBlocks, blocks)
	s.set(SignalKVBlockSize, blockSize)
	s.set(SignalKVCapacityTokens, blocks*blockSize)
}
