package detection

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kneewatch/kneewatch/internal/sim"
)

// vLLM V1's bucket edges for the two latency histograms the SLO is read
// from (docs/upstream-metrics.md §1.2, vllm/v1/metrics/loggers.py).
var (
	vllmTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	vllmTPOTBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	vllmRequestLatencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
		30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// vllmMetrics is the replica's /metrics in virtual time: the vLLM V1 series
// that kneewatch's adapter and the baseline detectors read, with vLLM's
// names, labels and bucket edges, updated from engine events at the virtual
// time they happen and gathered at every scrape. (The simulator's own
// recorder is driven by its wall-clock HTTP replica and is not reachable
// from virtual time, so the bench records the same names itself.)
type vllmMetrics struct {
	reg *prometheus.Registry

	running, waiting, kvUsage            prometheus.Gauge
	preemptions, promptTokens, genTokens prometheus.Counter
	success                              prometheus.Counter
	ttft, tpot, e2e, queue               prometheus.Observer
	promptLength, outputLength           prometheus.Observer
}

func newVLLMMetrics(p sim.Preset) *vllmMetrics {
	labels := prometheus.Labels{"model_name": p.Model, "engine": "0"}
	m := &vllmMetrics{reg: prometheus.NewRegistry()}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels})
		m.reg.MustRegister(g)
		return g
	}
	counter := func(name, help string, extra prometheus.Labels) prometheus.Counter {
		l := prometheus.Labels{}
		for k, v := range labels {
			l[k] = v
		}
		for k, v := range extra {
			l[k] = v
		}
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: l})
		m.reg.MustRegister(c)
		return c
	}
	histogram := func(name, help string, buckets []float64) prometheus.Observer {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, ConstLabels: labels, Buckets: buckets})
		m.reg.MustRegister(h)
		return h
	}
	m.running = gauge("vllm:num_requests_running", "Number of requests in model execution batches.")
	m.waiting = gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.")
	m.kvUsage = gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.")
	m.preemptions = counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", nil)
	m.promptTokens = counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", nil)
	m.genTokens = counter("vllm:generation_tokens_total", "Number of generation tokens processed.", nil)
	m.success = counter("vllm:request_success_total", "Count of successfully processed requests.",
		prometheus.Labels{"finished_reason": "length"})
	m.ttft = histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", vllmTTFTBuckets)
	m.tpot = histogram("vllm:request_time_per_output_token_seconds",
		"Histogram of time_per_output_token_seconds per request.", vllmTPOTBuckets)
	m.e2e = histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
		vllmRequestLatencyBuckets)
	m.queue = histogram("vllm:request_queue_time_seconds",
		"Histogram of time spent in WAITING phase for request.", vllmRequestLatencyBuckets)
	m.promptLength = histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.",
		sim.TokenBuckets(p.MaxModelLen))
	m.outputLength = histogram("vllm:request_generation_tokens", "Number of generation tokens processed.",
		sim.TokenBuckets(p.MaxModelLen))

	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "vllm:cache_config_info", Help: "Information of the LLMEngine CacheConfig",
		ConstLabels: prometheus.Labels{
			"engine":         "0",
			"block_size":     strconv.Itoa(p.BlockSize),
			"num_gpu_blocks": strconv.Itoa(p.KVBlocks()),
		},
	})
	info.Set(1)
	m.reg.MustRegister(info)
	return m
}

// setState sets the queue and KV gauges.
func (m *vllmMetrics) setState(running, waiting int, kv float64) {
	m.running.Set(float64(running))
	m.waiting.Set(float64(waiting))
	m.kvUsage.Set(kv)
}

// step records one engine iteration's results, at its end.
func (m *vllmMetrics) step(res *sim.StepResult) {
	m.genTokens.Add(float64(len(res.Tokens)))
	m.preemptions.Add(float64(len(res.Preempted)))
	// vLLM counts a request's prompt tokens once, when its prefill completes.
	for _, r := range res.FirstTokens {
		m.promptTokens.Add(float64(r.PromptTokens))
		m.ttft.Observe(r.TTFT().Seconds())
	}
	// Like vLLM, the per-request latencies are recorded when a request finishes.
	for _, r := range res.Finished {
		m.success.Inc()
		if tpot, ok := r.TPOT(); ok {
			m.tpot.Observe(tpot.Seconds())
		}
		m.e2e.Observe(r.E2E().Seconds())
		m.queue.Observe(r.QueueDuration().Seconds())
		m.promptLength.Observe(float64(r.PromptTokens))
		m.outputLength.Observe(float64(r.Generated))
	}
}
