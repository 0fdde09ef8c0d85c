package sim

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// SGLang's current default histogram buckets (docs/upstream-metrics.md §2;
// python/sglang/srt/metrics/collector.py).
var (
	sglangTTFTBuckets = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}
	sglangITLBuckets  = []float64{0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035,
		0.040, 0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0, 6.0, 8.0}
	sglangE2EBuckets = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200,
		400, 600, 1200, 1800, 2400}
	sglangQueueBuckets = []float64{0.0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80,
		90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000}
)

// sglangThroughputSteps is how many steps gen_throughput averages over, like
// SGLang's decode log interval.
const sglangThroughputSteps = 40

// sglangRecorder exposes SGLang's metric names. Its semantics differ from
// vLLM's where SGLang's do (docs/upstream-metrics.md §7.6): prompt and generation
// token counters advance when a request finishes, retractions (preemptions)
// are a gauge of the last step, and there is no finish-reason label.
type sglangRecorder struct {
	blockSize int

	running, queued, usedTokens, tokenUsage prometheus.Gauge
	genThroughput, retracted                prometheus.Gauge

	promptTokens, generationTokens, requests, aborted, retractedTotal prometheus.Counter

	ttft, itl, e2e, queue prometheus.Observer

	// gen_throughput bookkeeping: tokens and elapsed time over the last steps.
	windowStart  time.Time
	windowTokens int
	windowSteps  int
}

func newSGLangRecorder(reg prometheus.Registerer, info metricsInfo) (recorder, error) {
	labels := prometheus.Labels{"model_name": info.model}
	r := &sglangRecorder{blockSize: info.preset.BlockSize}
	var cs []prometheus.Collector
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels})
		cs = append(cs, g)
		return g
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
		cs = append(cs, c)
		return c
	}
	histogram := func(name, help string, buckets []float64) prometheus.Observer {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, ConstLabels: labels, Buckets: buckets})
		cs = append(cs, h)
		return h
	}

	r.running = gauge("sglang:num_running_reqs", "The number of running requests.")
	r.queued = gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.")
	r.usedTokens = gauge("sglang:num_used_tokens", "The number of used tokens.")
	r.tokenUsage = gauge("sglang:token_usage", "The token usage.")
	gauge("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.").
		Set(float64(info.preset.KVBlocks() * info.preset.BlockSize))
	r.genThroughput = gauge("sglang:gen_throughput", "The generation throughput (token/s).")
	gauge("sglang:cache_hit_rate", "The prefix cache hit rate.") // no prefix cache: 0
	r.retracted = gauge("sglang:num_retracted_reqs", "The number of retracted requests.")

	r.retractedTotal = counter("sglang:num_retracted_requests_total", "Total number of retracted requests.")
	r.promptTokens = counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.")
	r.generationTokens = counter("sglang:generation_tokens_total", "Number of generation tokens processed.")
	counter("sglang:cached_tokens_total", "Number of cached prompt tokens.")
	r.requests = counter("sglang:num_requests_total", "Number of requests processed.")
	r.aborted = counter("sglang:num_aborted_requests_total", "Number of requests aborted.")

	r.ttft = histogram("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
		sglangTTFTBuckets)
	r.itl = histogram("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
		sglangITLBuckets)
	r.e2e = histogram("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds",
		sglangE2EBuckets)
	r.queue = histogram("sglang:queue_time_seconds", "Histogram of queueing time in seconds.", sglangQueueBuckets)
	return r, registerAll(reg, cs...)
}

func (r *sglangRecorder) submitted(int, int) {}

func (r *sglangRecorder) state(s State) {
	r.running.Set(float64(s.Running))
	r.queued.Set(float64(s.Waiting))
	r.usedTokens.Set(float64(s.KVUsedBlocks * r.blockSize))
	r.tokenUsage.Set(s.KVUsage)
	if s.Running == 0 && s.Waiting == 0 {
		r.genThroughput.Set(0)
		r.windowStart, r.windowTokens, r.windowSteps = time.Time{}, 0, 0
	}
}

func (r *sglangRecorder) step(ev *stepEvent) {
	r.retracted.Set(float64(ev.preempted))
	r.retractedTotal.Add(float64(ev.preempted))
	for _, a := range ev.admitted {
		r.queue.Observe(a.queue.Seconds())
	}
	for _, f := range ev.firstTokens {
		r.ttft.Observe(f.ttft.Seconds())
	}
	for _, d := range ev.intervals {
		r.itl.Observe(d.Seconds())
	}

	if r.windowStart.IsZero() {
		r.windowStart = ev.at
		return
	}
	r.windowTokens += ev.generated
	r.windowSteps++
	if r.windowSteps >= sglangThroughputSteps {
		if dt := ev.at.Sub(r.windowStart).Seconds(); dt > 0 {
			r.genThroughput.Set(float64(r.windowTokens) / dt)
		}
		r.windowStart, r.windowTokens, r.windowSteps = ev.at, 0, 0
	}
}

func (r *sglangRecorder) finished(ev *finishEvent) {
	r.requests.Inc()
	// SGLang adds a request's tokens to the counters when it finishes.
	if ev.first {
		r.promptTokens.Add(float64(ev.promptTokens))
	}
	r.generationTokens.Add(float64(ev.generated))
	if ev.aborted() {
		r.aborted.Inc()
		return
	}
	r.e2e.Observe(ev.e2e.Seconds())
}
