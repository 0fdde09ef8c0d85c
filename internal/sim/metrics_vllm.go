package sim

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// vLLM's histogram bucket edges, as docs/upstream-metrics.md §1.2 lists them
// (vllm/v1/metrics/loggers.py). The 1-2-5 token buckets depend on
// max_model_len and are built by buckets125.
var (
	vllmTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	vllmTPOTBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	vllmRequestLatencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
		30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	vllmIterationTokensBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
)

// vllmFinishReasons are pre-created at 0, as vLLM does for every FinishReason.
var vllmFinishReasons = []string{"stop", "length", "abort"}

// vllmRecorder exposes vLLM's metrics. V1 (the default flavor) and V0 share
// it; v0 switches the names and labels that differ (docs/upstream-metrics.md §1.3).
type vllmRecorder struct {
	v0 bool

	running, waiting, kvUsage prometheus.Gauge

	promptTokens, generationTokens, preemptions prometheus.Counter
	prefixQueries                               prometheus.Counter // V1 only
	success                                     *prometheus.CounterVec

	ttft, itl, requestTPOT                  prometheus.Observer // requestTPOT is V1 only
	e2e, queue, inference, prefill, decode  prometheus.Observer
	reqPrompt, reqGeneration, iterTokens    prometheus.Observer
	maxGeneration, paramsMaxTokens, paramsN prometheus.Observer
}

func newVLLMRecorder(reg prometheus.Registerer, info metricsInfo) (recorder, error) {
	return newVLLM(reg, info, false)
}

func newVLLM(reg prometheus.Registerer, info metricsInfo, v0 bool) (*vllmRecorder, error) {
	labels := prometheus.Labels{"model_name": info.model}
	if !v0 {
		labels["engine"] = "0"
	}
	r := &vllmRecorder{v0: v0}
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
	tokenBuckets := buckets125(info.preset.MaxModelLen)

	r.running = gauge("vllm:num_requests_running", "Number of requests in model execution batches.")
	r.waiting = gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.")
	if v0 {
		r.kvUsage = gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.")
		// V0 still exported swapping and CPU-cache gauges; the simulator never swaps.
		gauge("vllm:num_requests_swapped", "Number of requests swapped to CPU.")
		gauge("vllm:cpu_cache_usage_perc", "CPU KV-cache usage. 1 means 100 percent usage.")
		gauge("vllm:gpu_prefix_cache_hit_rate", "GPU prefix cache block hit rate.")
	} else {
		r.kvUsage = gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.")
		r.prefixQueries = counter("vllm:prefix_cache_queries_total",
			"Prefix cache queries, in terms of number of queried tokens.")
		// The simulated engine has no prefix cache, so hits stay 0.
		counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.")
	}
	r.preemptions = counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.")
	r.promptTokens = counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.")
	r.generationTokens = counter("vllm:generation_tokens_total", "Number of generation tokens processed.")
	r.success = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vllm:request_success_total", Help: "Count of successfully processed requests.", ConstLabels: labels,
	}, []string{"finished_reason"})
	for _, reason := range vllmFinishReasons {
		r.success.WithLabelValues(reason)
	}
	cs = append(cs, r.success)

	r.reqPrompt = histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", tokenBuckets)
	r.reqGeneration = histogram("vllm:request_generation_tokens", "Number of generation tokens processed.", tokenBuckets)
	r.maxGeneration = histogram("vllm:request_max_num_generation_tokens",
		"Histogram of maximum number of requested generation tokens.", tokenBuckets)
	r.paramsMaxTokens = histogram("vllm:request_params_max_tokens",
		"Histogram of the max_tokens request parameter.", tokenBuckets)
	r.paramsN = histogram("vllm:request_params_n", "Histogram of the n request parameter.", []float64{1, 2, 5, 10, 20})
	r.iterTokens = histogram("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.",
		vllmIterationTokensBuckets)
	r.ttft = histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", vllmTTFTBuckets)
	if v0 {
		r.itl = histogram("vllm:time_per_output_token_seconds",
			"Histogram of time per output token in seconds.", vllmTPOTBuckets)
	} else {
		r.itl = histogram("vllm:inter_token_latency_seconds",
			"Histogram of inter-token latency in seconds.", vllmTPOTBuckets)
		r.requestTPOT = histogram("vllm:request_time_per_output_token_seconds",
			"Histogram of time_per_output_token_seconds per request.", vllmTPOTBuckets)
	}
	r.e2e = histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
		vllmRequestLatencyBuckets)
	r.queue = histogram("vllm:request_queue_time_seconds",
		"Histogram of time spent in WAITING phase for request.", vllmRequestLatencyBuckets)
	r.inference = histogram("vllm:request_inference_time_seconds",
		"Histogram of time spent in RUNNING phase for request.", vllmRequestLatencyBuckets)
	r.prefill = histogram("vllm:request_prefill_time_seconds",
		"Histogram of time spent in PREFILL phase for request.", vllmRequestLatencyBuckets)
	r.decode = histogram("vllm:request_decode_time_seconds",
		"Histogram of time spent in DECODE phase for request.", vllmRequestLatencyBuckets)

	cs = append(cs, vllmCacheConfigInfo(info.preset, v0))
	return r, registerAll(reg, cs...)
}

// cacheDtypeLabel is the preset's KV-cache dtype as vLLM's cache_dtype
// label shows it ("auto" when unset).
func (p Preset) cacheDtypeLabel() string {
	if p.KVCacheDtype == "" {
		return KVCacheAuto
	}
	return p.KVCacheDtype
}

// vllmCacheConfigInfo is vllm:cache_config_info: value 1, the cache
// configuration in its labels (string values as Python prints them).
func vllmCacheConfigInfo(p Preset, v0 bool) prometheus.Collector {
	labels := prometheus.Labels{
		"block_size":               strconv.Itoa(p.BlockSize),
		"cache_dtype":              p.cacheDtypeLabel(),
		"calculate_kv_scales":      "False",
		"cpu_offload_gb":           "0",
		"enable_prefix_caching":    "True",
		"gpu_memory_utilization":   strconv.FormatFloat(p.GPUMemoryUtilization, 'f', -1, 64),
		"is_attention_free":        "False",
		"num_cpu_blocks":           "None",
		"num_gpu_blocks":           strconv.Itoa(p.KVBlocks()),
		"num_gpu_blocks_override":  "None",
		"prefix_caching_hash_algo": "sha256",
		"sliding_window":           "None",
		"swap_space_bytes":         "4294967296",
	}
	if v0 {
		labels["enable_prefix_caching"] = "False"
		delete(labels, "prefix_caching_hash_algo")
	} else {
		labels["engine"] = "0"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "vllm:cache_config_info", Help: "Information of the LLMEngine CacheConfig", ConstLabels: labels,
	})
	g.Set(1)
	return g
}

func (r *vllmRecorder) submitted(int, int) {}

func (r *vllmRecorder) state(s State) {
	r.running.Set(float64(s.Running))
	r.waiting.Set(float64(s.Waiting))
	r.kvUsage.Set(s.KVUsage)
}

func (r *vllmRecorder) step(ev *stepEvent) {
	r.iterTokens.Observe(float64(ev.iterationTokens))
	r.generationTokens.Add(float64(ev.generated))
	r.preemptions.Add(float64(ev.preempted))
	if r.prefixQueries != nil {
		for _, a := range ev.admitted {
			r.prefixQueries.Add(float64(a.promptTokens))
		}
	}
	// vLLM counts a request's prompt tokens once, when its prefill completes.
	for _, f := range ev.firstTokens {
		r.promptTokens.Add(float64(f.promptTokens))
		r.ttft.Observe(f.ttft.Seconds())
	}
	for _, d := range ev.intervals {
		r.itl.Observe(d.Seconds())
	}
}

func (r *vllmRecorder) finished(ev *finishEvent) {
	r.success.WithLabelValues(ev.reason).Inc()
	if ev.aborted() {
		return
	}
	// vLLM V1 records the per-request histograms when a request finishes.
	r.e2e.Observe(ev.e2e.Seconds())
	r.queue.Observe(ev.queue.Seconds())
	r.inference.Observe(ev.inference.Seconds())
	r.prefill.Observe(ev.prefill.Seconds())
	r.decode.Observe(ev.decode.Seconds())
	r.reqPrompt.Observe(float64(ev.promptTokens))
	r.reqGeneration.Observe(float64(ev.generated))
	r.maxGeneration.Observe(float64(ev.maxTokens))
	r.paramsMaxTokens.Observe(float64(ev.maxTokens))
	r.paramsN.Observe(1)
	if r.requestTPOT != nil && ev.hasTPOT {
		r.requestTPOT.Observe(ev.tpot.Seconds())
	}
}
