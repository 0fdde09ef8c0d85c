package collector

// trtllmAdapter reads Triton Inference Server with the TensorRT-LLM backend
// (docs/upstream-metrics.md §4).
//
//   - Running is request_type="scheduled" and waiting request_type="waiting",
//     the mapping the Gateway API inference extension uses.
//   - The nv_inference_*_duration_us series are cumulative microsecond
//     counters, not histograms: they are converted to seconds, and only
//     averages (Δseconds ÷ Δrequests) can be computed from them.
//   - Triton exports nv_inference_* for every model in its repository
//     (ensemble, pre/post-processing, …); the model is chosen among those
//     with nv_trt_llm_* series, and everything else is read for it alone.
var trtllmAdapter = specAdapter{
	name:       "trtllm",
	prefixes:   []string{"nv_trt_llm_"},
	modelLabel: "model",
	modelFrom:  []string{"nv_trt_llm_request_metrics", "nv_trt_llm_kv_cache_block_metrics"},
	metrics: []metricSpec{
		{signal: SignalRunning, names: []string{"nv_trt_llm_request_metrics"}, matchLabel: "request_type", matchValue: "scheduled", required: true},
		{signal: SignalWaiting, names: []string{"nv_trt_llm_request_metrics"}, matchLabel: "request_type", matchValue: "waiting", required: true},
		{signal: SignalMaxRunning, names: []string{"nv_trt_llm_request_metrics"}, matchLabel: "request_type", matchValue: "max"},
		{signal: SignalKVUsage, names: []string{"nv_trt_llm_kv_cache_block_metrics"}, matchLabel: "kv_cache_block_type", matchValue: "fraction", mean: true},
		{signal: SignalKVCapacityBlocks, names: []string{"nv_trt_llm_kv_cache_block_metrics"}, matchLabel: "kv_cache_block_type", matchValue: "max"},
		{signal: SignalKVBlockSize, names: []string{"nv_trt_llm_kv_cache_block_metrics"}, matchLabel: "kv_cache_block_type", matchValue: "tokens_per", mean: true},
		{signal: SignalRequestsSucceeded, names: []string{"nv_inference_request_success"}},
		{signal: SignalRequestsFailed, names: []string{"nv_inference_request_failure"}},
		{signal: SignalE2ESecondsTotal, names: []string{"nv_inference_request_duration_us"}, scale: 1e-6},
		{signal: SignalQueueSecondsTotal, names: []string{"nv_inference_queue_duration_us"}, scale: 1e-6},
	},
	extra: trtllmDerived,
}

// trtllmDerived adds capacity in tokens and finished requests, both sums of
// two signals read above; neither is set unless both inputs are present.
func trtllmDerived(_ familyIndex, _ selector, s *Snapshot) {
	blocks, okB := s.Gauge(SignalKVCapacityBlocks)
	size, okS := s.Gauge(SignalKVBlockSize)
	if okB && okS {
		s.set(SignalKVCapacityTokens, blocks*size)
	}
	ok, okOK := s.Counter(SignalRequestsSucceeded)
	failed, okF := s.Counter(SignalRequestsFailed)
	if okOK && okF {
		s.set(SignalRequestsFinished, ok+failed)
	}
}
