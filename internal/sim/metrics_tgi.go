package sim

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
)

// tgiDurationBuckets are TGI's buckets for every metric whose name ends in
// "duration": 0.0001 × 1.5^k for k = 1…35 (0.00015 s … ≈ 145.6 s), per
// router/src/server.rs (docs/upstream-metrics.md §3).
func tgiDurationBuckets() []float64 {
	out := make([]float64, 35)
	for k := range out {
		out[k] = 0.0001 * math.Pow(1.5, float64(k+1))
	}
	return out
}

// tgiRecorder exposes Hugging Face TGI's router metrics. TGI has no labels on
// these, no TTFT histogram and no cumulative token counters (the length
// histograms' _sum serve as counters). Counters are named as in TGI's code,
// without a _total suffix. TGI has no KV-usage ratio: tgi_batch_current_max_tokens
// reports the KV tokens held by the batch, tgi_batch_max_total_tokens the KV
// capacity in tokens.
type tgiRecorder struct {
	blockSize int

	queueSize, batchSize, batchMaxTokens prometheus.Gauge

	requests, success prometheus.Counter

	duration, queueDuration, inferenceDuration, meanTimePerToken prometheus.Observer
	inputLength, generatedTokens, maxNewTokens                   prometheus.Observer
}

func newTGIRecorder(reg prometheus.Registerer, info metricsInfo) (recorder, error) {
	p := info.preset
	r := &tgiRecorder{blockSize: p.BlockSize}
	var cs []prometheus.Collector
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		cs = append(cs, g)
		return g
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		cs = append(cs, c)
		return c
	}
	histogram := func(name, help string, buckets []float64) prometheus.Observer {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
		cs = append(cs, h)
		return h
	}
	durations := tgiDurationBuckets()
	// TGI's defaults: max_total_tokens = the context, max_input_tokens one less.
	maxTotal := float64(p.MaxModelLen)
	maxInput := float64(p.MaxModelLen - 1)

	r.queueSize = gauge("tgi_queue_size", "Number of requests waiting in the queue.")
	r.batchSize = gauge("tgi_batch_current_size", "Number of requests in the current batch.")
	r.batchMaxTokens = gauge("tgi_batch_current_max_tokens", "Tokens held by the current batch.")
	gauge("tgi_batch_max_total_tokens", "Maximum tokens the batch can hold.").Set(float64(p.KVBlocks() * p.BlockSize))

	r.requests = counter("tgi_request_count", "Number of requests received.")
	r.success = counter("tgi_request_success", "Number of successful requests.")

	r.duration = histogram("tgi_request_duration", "End-to-end request duration in seconds.", durations)
	r.queueDuration = histogram("tgi_request_queue_duration", "Time spent in the queue in seconds.", durations)
	r.inferenceDuration = histogram("tgi_request_inference_duration", "Inference duration in seconds.", durations)
	r.meanTimePerToken = histogram("tgi_request_mean_time_per_token_duration",
		"Mean time per generated token in seconds.", durations)
	r.inputLength = histogram("tgi_request_input_length", "Input length in tokens.", linearBuckets(maxInput, 100))
	r.generatedTokens = histogram("tgi_request_generated_tokens", "Generated tokens.", linearBuckets(maxTotal, 100))
	r.maxNewTokens = histogram("tgi_request_max_new_tokens", "Requested max_new_tokens.", linearBuckets(maxTotal, 100))
	return r, registerAll(reg, cs...)
}

func (r *tgiRecorder) submitted(promptTokens, maxTokens int) {
	r.requests.Inc()
	r.inputLength.Observe(float64(promptTokens))
	r.maxNewTokens.Observe(float64(maxTokens))
}

func (r *tgiRecorder) state(s State) {
	r.queueSize.Set(float64(s.Waiting))
	r.batchSize.Set(float64(s.Running))
	r.batchMaxTokens.Set(float64(s.KVUsedBlocks * r.blockSize))
}

func (r *tgiRecorder) step(ev *stepEvent) {
	for _, a := range ev.admitted {
		r.queueDuration.Observe(a.queue.Seconds())
	}
}

func (r *tgiRecorder) finished(ev *finishEvent) {
	if ev.aborted() {
		return
	}
	r.success.Inc()
	r.duration.Observe(ev.e2e.Seconds())
	r.inferenceDuration.Observe(ev.inference.Seconds())
	r.generatedTokens.Observe(float64(ev.generated))
	// TGI divides the whole inference time, prefill included, by the
	// generated tokens: a per-request mean, not vLLM's decode-only TPOT.
	if ev.generated > 0 {
		r.meanTimePerToken.Observe(ev.inference.Seconds() / float64(ev.generated))
	}
}
