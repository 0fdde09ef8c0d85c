// Package collector turns engine and GPU metric scrapes into normalized
// snapshots and windowed rates, means and histogram quantiles.
//
// Data flows one way: a Scraper fetches a target's exposition, an engine
// adapter (vllm.go, sglang.go, tgi.go, trtllm.go) or the DCGM normalizer
// (dcgm.go) turns it into a Snapshot, and a Window turns a sequence of
// snapshots into PromQL-equivalent rates and quantiles (Observe reads a
// window as the knee package's Observation). Engine-specific metric names
// appear only in the adapter files.
//
// What schedules the scrapes, keeps a window per replica, evaluates and
// exports is package watch: this package has no loop and no goroutines of
// its own.
package collector

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Signal names one engine-independent quantity a snapshot may carry.
type Signal int

// SignalKind says how a signal is read: as an instantaneous gauge, as a
// monotonically increasing counter, or as a cumulative histogram.
type SignalKind int

// Signal kinds.
const (
	KindGauge SignalKind = iota + 1
	KindCounter
	KindHistogram
)

// Signals. The comment on each says its unit; names in snapshots and golden
// files are the strings in signalInfo.
const (
	SignalUnknown Signal = iota

	// Gauges.
	SignalRunning            // requests in the running batch
	SignalWaiting            // requests queued, not yet scheduled
	SignalKVUsage            // KV-cache usage, ratio 0..1
	SignalKVUsedTokens       // KV-cache tokens in use
	SignalKVCapacityBlocks   // KV-cache capacity in blocks (pages)
	SignalKVBlockSize        // tokens per KV-cache block (page)
	SignalKVCapacityTokens   // KV-cache (or batch token budget) capacity in tokens
	SignalMaxRunning         // engine's configured maximum batch size in requests
	SignalRetracted          // requests retracted from the current batch (SGLang gauge, not a counter)
	SignalPrefixCacheHitRate // prefix-cache hit ratio 0..1 computed by the engine itself

	// Gauges aggregated from the replica's GPUs (see AttachGPUs).
	SignalGPUUtilization     // DCGM GPU utilization, ratio 0..1 (mean over GPUs)
	SignalGPUEngineActive    // graphics/compute engine active, ratio 0..1 (mean)
	SignalGPUTensorActive    // tensor pipe active, ratio 0..1 (mean)
	SignalGPUDRAMActive      // device memory interface active, ratio 0..1 (mean)
	SignalGPUPowerWatts      // power draw in watts (sum over GPUs)
	SignalGPUMemoryUsedBytes // framebuffer used, bytes (sum)
	SignalGPUMemoryFreeBytes // framebuffer free, bytes (sum)
	SignalGPUSMClockHertz    // SM clock in Hz (mean)

	// Counters.
	SignalPreemptions        // cumulative preemptions
	SignalPromptTokens       // cumulative prompt (prefill) tokens
	SignalGenerationTokens   // cumulative generated (decode) tokens
	SignalRequestsFinished   // cumulative finished requests of every outcome
	SignalRequestsSucceeded  // cumulative requests the engine reports as successful
	SignalRequestsAborted    // cumulative aborted requests
	SignalRequestsFailed     // cumulative failed requests
	SignalPrefixCacheQueries // cumulative prefix-cache queried tokens
	SignalPrefixCacheHits    // cumulative prefix-cache hit tokens
	SignalE2ESecondsTotal    // cumulative end-to-end request seconds (engines without histograms)
	SignalQueueSecondsTotal  // cumulative queueing seconds (engines without histograms)
	// The request mix's totals: finished requests and their prompt and
	// output tokens, all three counted as each request finishes, from the
	// per-request token histograms (see MixSignals).
	SignalMixRequests
	SignalMixPromptTokens
	SignalMixOutputTokens

	// Histograms, in seconds but for SignalPromptLength.
	SignalTTFT      // time to first token, one observation per request
	SignalTPOT      // mean time per output token, one observation per request
	SignalITL       // inter-token latency, one observation per token interval
	SignalE2E       // end-to-end request latency
	SignalQueueTime // time spent waiting before scheduling
	// SignalPromptLength is the prompt tokens of each finished request.
	SignalPromptLength

	signalCount // keep last
)

var signalInfo = [signalCount]struct {
	name string
	kind SignalKind
}{
	SignalRunning:            {"running_requests", KindGauge},
	SignalWaiting:            {"waiting_requests", KindGauge},
	SignalKVUsage:            {"kv_cache_usage_ratio", KindGauge},
	SignalKVUsedTokens:       {"kv_cache_used_tokens", KindGauge},
	SignalKVCapacityBlocks:   {"kv_cache_capacity_blocks", KindGauge},
	SignalKVBlockSize:        {"kv_cache_block_size_tokens", KindGauge},
	SignalKVCapacityTokens:   {"kv_cache_capacity_tokens", KindGauge},
	SignalMaxRunning:         {"max_running_requests", KindGauge},
	SignalRetracted:          {"retracted_requests", KindGauge},
	SignalPrefixCacheHitRate: {"prefix_cache_hit_ratio", KindGauge},

	SignalGPUUtilization:     {"gpu_utilization_ratio", KindGauge},
	SignalGPUEngineActive:    {"gpu_engine_active_ratio", KindGauge},
	SignalGPUTensorActive:    {"gpu_tensor_active_ratio", KindGauge},
	SignalGPUDRAMActive:      {"gpu_dram_active_ratio", KindGauge},
	SignalGPUPowerWatts:      {"gpu_power_watts", KindGauge},
	SignalGPUMemoryUsedBytes: {"gpu_memory_used_bytes", KindGauge},
	SignalGPUMemoryFreeBytes: {"gpu_memory_free_bytes", KindGauge},
	SignalGPUSMClockHertz:    {"gpu_sm_clock_hertz", KindGauge},

	SignalPreemptions:        {"preemptions_total", KindCounter},
	SignalPromptTokens:       {"prompt_tokens_total", KindCounter},
	SignalGenerationTokens:   {"generation_tokens_total", KindCounter},
	SignalRequestsFinished:   {"requests_finished_total", KindCounter},
	SignalRequestsSucceeded:  {"requests_succeeded_total", KindCounter},
	SignalRequestsAborted:    {"requests_aborted_total", KindCounter},
	SignalRequestsFailed:     {"requests_failed_total", KindCounter},
	SignalPrefixCacheQueries: {"prefix_cache_queries_tokens_total", KindCounter},
	SignalPrefixCacheHits:    {"prefix_cache_hits_tokens_total", KindCounter},
	SignalE2ESecondsTotal:    {"e2e_seconds_total", KindCounter},
	SignalQueueSecondsTotal:  {"queue_seconds_total", KindCounter},
	SignalMixRequests:        {"mix_requests_total", KindCounter},
	SignalMixPromptTokens:    {"mix_prompt_tokens_total", KindCounter},
	SignalMixOutputTokens:    {"mix_output_tokens_total", KindCounter},

	SignalTTFT:      {"ttft_seconds", KindHistogram},
	SignalTPOT:      {"tpot_seconds", KindHistogram},
	SignalITL:       {"itl_seconds", KindHistogram},
	SignalE2E:       {"e2e_seconds", KindHistogram},
	SignalQueueTime: {"queue_time_seconds", KindHistogram},

	SignalPromptLength: {"prompt_length_tokens", KindHistogram},
}

// String returns the signal's stable snake_case name.
func (s Signal) String() string {
	if s <= SignalUnknown || s >= signalCount {
		return "signal(" + strconv.Itoa(int(s)) + ")"
	}
	return signalInfo[s].name
}

// Kind returns whether the signal is a gauge, counter or histogram (0 for an
// invalid signal).
func (s Signal) Kind() SignalKind {
	if s <= SignalUnknown || s >= signalCount {
		return 0
	}
	return signalInfo[s].kind
}

// MarshalText makes signals readable as JSON map keys.
func (s Signal) MarshalText() ([]byte, error) {
	if s.Kind() == 0 {
		return nil, fmt.Errorf("invalid signal %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText parses a signal name written by MarshalText.
func (s *Signal) UnmarshalText(b []byte) error {
	for i := SignalUnknown + 1; i < signalCount; i++ {
		if signalInfo[i].name == string(b) {
			*s = i
			return nil
		}
	}
	return fmt.Errorf("unknown signal %q", b)
}

// Problem records something in a scrape that was present but unusable, so
// the signal it would have fed is absent instead of wrong.
type Problem struct {
	Metric string `json:"metric"` // the exposed metric family name
	Reason string `json:"reason"`
	// Kind classifies the problem for the scrape problems counter's
	// problem label (one of the Problem* constants); Signal is the signal
	// it made unknown, if any.
	Kind   string `json:"-"`
	Signal Signal `json:"-"`
}

// Kinds of Problem, the values of kneewatch_target_scrape_problems_total's
// problem label. The set is fixed so the label cannot grow without bound.
const (
	ProblemMissing         = "missing"          // a required family is not in the scrape
	ProblemWrongType       = "wrong_type"       // a family has an unexpected metric type
	ProblemNonFinite       = "non_finite"       // NaN or ±Inf where a number was needed
	ProblemNegativeCounter = "negative_counter" // a counter below zero
	ProblemDuplicateSeries = "duplicate_series" // one label set twice in a family
	ProblemPartialHisto    = "partial_histogram"
	ProblemNonMonotonic    = "non_monotonic_histogram"
	ProblemInvalidHisto    = "invalid_histogram" // no buckets, le=NaN, bad counts, layouts that differ
	ProblemInvalidLabel    = "invalid_label"     // an info label that is not what it should be
	ProblemLabelTooLong    = "label_too_long"    // an upstream label value over MaxLabelValueBytes
	ProblemDCGMSentinel    = "dcgm_sentinel"     // DCGM's blank / not-supported values
	// ProblemMemoryBudget is not in the data: a scrape that got no room in
	// the scrape memory budget within its timeout, so was not made.
	ProblemMemoryBudget = "memory_budget"
)

func (p Problem) String() string { return p.Metric + ": " + p.Reason }

// Snapshot is one normalized view of a replica at one scrape time. A signal
// the engine does not expose, or that could not be read, is absent from the
// maps; it is never filled with zero.
type Snapshot struct {
	Time       time.Time            `json:"time"`
	Engine     string               `json:"engine"` // adapter name: vllm, sglang, tgi, trtllm
	Model      string               `json:"model,omitempty"`
	Gauges     map[Signal]float64   `json:"gauges,omitempty"`
	Counters   map[Signal]float64   `json:"counters,omitempty"`
	Histograms map[Signal]Histogram `json:"histograms,omitempty"`
	GPUs       []GPUSnapshot        `json:"gpus,omitempty"`
	Problems   []Problem            `json:"problems,omitempty"`
}

// NewSnapshot is an empty snapshot of engine, its maps ready to fill (for
// adapters, and for tests and benches that build snapshots by hand).
func NewSnapshot(engine string) Snapshot {
	return Snapshot{
		Engine:     engine,
		Gauges:     map[Signal]float64{},
		Counters:   map[Signal]float64{},
		Histograms: map[Signal]Histogram{},
	}
}

// Gauge returns a gauge signal's value and whether it is present.
func (s Snapshot) Gauge(sig Signal) (float64, bool) {
	v, ok := s.Gauges[sig]
	return v, ok
}

// Counter returns a counter signal's value and whether it is present.
func (s Snapshot) Counter(sig Signal) (float64, bool) {
	v, ok := s.Counters[sig]
	return v, ok
}

// Histogram returns a histogram signal and whether it is present.
func (s Snapshot) Histogram(sig Signal) (Histogram, bool) {
	h, ok := s.Histograms[sig]
	return h, ok
}

func (s *Snapshot) problem(metric, format string, args ...any) {
	s.problemOf(ProblemInvalidLabel, SignalUnknown, metric, format, args...)
}

// problemOf records a problem of a kind that made sig unknown.
func (s *Snapshot) problemOf(kind string, sig Signal, metric, format string, args ...any) {
	s.Problems = append(s.Problems, Problem{Metric: CapLabel(metric), Reason: fmt.Sprintf(format, args...), Kind: kind, Signal: sig})
}

// set stores v under sig in the map its kind calls for.
func (s *Snapshot) set(sig Signal, v float64) {
	switch sig.Kind() {
	case KindGauge:
		s.Gauges[sig] = v
	case KindCounter:
		s.Counters[sig] = v
	}
}

// Bucket is one cumulative histogram bucket: Count observations were ≤
// UpperBound.
type Bucket struct {
	UpperBound float64
	Count      float64
}

type bucketJSON struct {
	LE    string  `json:"le"`
	Count float64 `json:"count"`
}

// MarshalJSON writes the bound as Prometheus writes an le label, so +Inf
// survives JSON.
func (b Bucket) MarshalJSON() ([]byte, error) {
	return json.Marshal(bucketJSON{LE: formatBound(b.UpperBound), Count: b.Count})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (b *Bucket) UnmarshalJSON(data []byte) error {
	var j bucketJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	ub, err := strconv.ParseFloat(j.LE, 64)
	if err != nil {
		return fmt.Errorf("bucket le %q: %w", j.LE, err)
	}
	*b = Bucket{UpperBound: ub, Count: j.Count}
	return nil
}

func formatBound(f float64) string {
	if math.IsInf(f, +1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Histogram is a cumulative classic histogram as scraped: buckets sorted by
// upper bound, the last one +Inf. Sum is NaN when the exposition has no _sum.
type Histogram struct {
	Buckets []Bucket
	Count   float64
	Sum     float64
}

type histogramJSON struct {
	Count   float64  `json:"count"`
	Sum     *float64 `json:"sum,omitempty"`
	Buckets []Bucket `json:"buckets"`
}

// MarshalJSON omits a missing (NaN) sum rather than failing on it.
func (h Histogram) MarshalJSON() ([]byte, error) {
	j := histogramJSON{Count: h.Count, Buckets: h.Buckets}
	if !math.IsNaN(h.Sum) {
		j.Sum = &h.Sum
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (h *Histogram) UnmarshalJSON(data []byte) error {
	var j histogramJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*h = Histogram{Count: j.Count, Buckets: j.Buckets, Sum: math.NaN()}
	if j.Sum != nil {
		h.Sum = *j.Sum
	}
	return nil
}
