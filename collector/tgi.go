package collector

// tgiAdapter reads Hugging Face TGI metrics (docs/upstream-metrics.md §3).
//
//   - TGI has no TTFT histogram, so SignalTTFT is absent.
//   - TGI has no token counters: the _sum of the input-length and
//     generated-token histograms grows by each request's tokens, so it is
//     read as a counter.
//   - Counters are found with or without _total (the Rust exporter's
//     suffixing was not verified).
//   - TGI has no KV-usage ratio; tgi_batch_max_total_tokens is its token
//     budget and is reported as capacity in tokens. No usage is made up.
//   - TGI exports no model label; Snapshot.Model is the configured model.
var tgiAdapter = specAdapter{
	name:     "tgi",
	prefixes: []string{"tgi_"},
	metrics: []metricSpec{
		{signal: SignalRunning, names: []string{"tgi_batch_current_size"}, required: true},
		{signal: SignalWaiting, names: []string{"tgi_queue_size"}, required: true},
		{signal: SignalKVCapacityTokens, names: []string{"tgi_batch_max_total_tokens"}},
		{signal: SignalPromptTokens, names: []string{"tgi_request_input_length"}, histogramSum: true},
		{signal: SignalGenerationTokens, names: []string{"tgi_request_generated_tokens"}, histogramSum: true},
		{signal: SignalRequestsSucceeded, names: []string{"tgi_request_success"}},
		{signal: SignalRequestsFailed, names: []string{"tgi_request_failure"}},
		{signal: SignalTPOT, names: []string{"tgi_request_mean_time_per_token_duration"}},
		{signal: SignalE2E, names: []string{"tgi_request_duration"}},
		{signal: SignalQueueTime, names: []string{"tgi_request_queue_duration"}},
		{signal: SignalPromptLength, names: []string{"tgi_request_input_length"}},
		{signal: SignalMixRequests, names: []string{"tgi_request_input_length"}, histogramCount: true},
		{signal: SignalMixPromptTokens, names: []string{"tgi_request_input_length"}, histogramSum: true},
		{signal: SignalMixOutputTokens, names: []string{"tgi_request_generated_tokens"}, histogramSum: true},
	},
	extra: tgiFinished,
}

// tgiFinished derives finished = succeeded + failed. The Rust metrics
// exporter creates a counter on its first increment, and TGI increments
// tgi_request_failure{err} only on a failure, so an absent failure family
// means no failure since start (inferred from the exporter's design).
func tgiFinished(_ familyIndex, _ selector, s *Snapshot) {
	ok, have := s.Counter(SignalRequestsSucceeded)
	if !have {
		return
	}
	failed, _ := s.Counter(SignalRequestsFailed)
	s.set(SignalRequestsFinished, ok+failed)
}
