package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// recorder turns engine events into one serving engine's metric names (a
// "metrics flavor"). The replica's driver calls it, under the replica's lock,
// at the wall-clock time each event happens; each flavor lives in its own
// metrics_<flavor>.go file and is listed in metricsFlavors.
type recorder interface {
	// submitted records a request accepted by the engine.
	submitted(promptTokens, maxTokens int)
	// state sets the queue and KV-cache gauges after every change.
	state(s State)
	// step records one engine iteration, at its end.
	step(ev *stepEvent)
	// finished records a request that left the engine, completed or aborted.
	finished(ev *finishEvent)
}

// stepEvent is one engine iteration as the metrics see it.
type stepEvent struct {
	at time.Time
	// iterationTokens is prompt plus decode tokens computed in the step.
	iterationTokens int
	// generated is how many output tokens the step produced.
	generated int
	// preempted is how many requests lost their KV blocks.
	preempted int
	// admitted lists requests scheduled for the first time.
	admitted []admission
	// firstTokens lists requests whose first token this step produced.
	firstTokens []firstToken
	// intervals are the inter-token latencies of every non-first token.
	intervals []time.Duration
}

type admission struct {
	queue        time.Duration
	promptTokens int
}

type firstToken struct {
	ttft         time.Duration
	promptTokens int
}

// finishEvent is a request leaving the engine.
type finishEvent struct {
	// reason is vLLM's finished_reason: "length" (the simulator has no EOS,
	// so every completed request stops at max_tokens) or "abort".
	reason                    string
	promptTokens, generated   int
	maxTokens                 int
	e2e, queue, prefill       time.Duration
	decode, inference         time.Duration
	tpot                      time.Duration
	hasTPOT, scheduled, first bool
}

func (ev *finishEvent) aborted() bool { return ev.reason == "abort" }

func newFinishEvent(r *Request) *finishEvent {
	ev := &finishEvent{
		reason:       "length",
		promptTokens: r.PromptTokens,
		generated:    r.Generated,
		maxTokens:    r.MaxTokens,
		e2e:          r.E2E(),
		queue:        r.QueueDuration(),
		prefill:      r.PrefillDuration(),
		decode:       r.DecodeDuration(),
		inference:    sub(r.Finished, r.Scheduled),
		scheduled:    !r.Scheduled.IsZero(),
		first:        !r.FirstToken.IsZero(),
	}
	if r.Aborted {
		ev.reason = "abort"
	}
	ev.tpot, ev.hasTPOT = r.TPOT()
	return ev
}

// metricsInfo is what a flavor needs to know about the replica.
type metricsInfo struct {
	model  string
	preset Preset
}

// metricsFlavors lists every --metrics-flavor: name → constructor that
// registers the flavor's metrics on reg.
var metricsFlavors = map[string]func(reg prometheus.Registerer, info metricsInfo) (recorder, error){
	"vllm":    newVLLMRecorder,
	"vllm-v0": newVLLMV0Recorder,
	"sglang":  newSGLangRecorder,
	"tgi":     newTGIRecorder,
}

// DefaultMetricsFlavor is vLLM V1.
const DefaultMetricsFlavor = "vllm"

// MetricsFlavors lists the --metrics-flavor values, sorted.
func MetricsFlavors() []string {
	names := make([]string, 0, len(metricsFlavors))
	for n := range metricsFlavors {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// newRecorder registers flavor's metrics on a fresh registry.
func newRecorder(flavor string, info metricsInfo) (*prometheus.Registry, recorder, error) {
	if flavor == "" {
		flavor = DefaultMetricsFlavor
	}
	mk, ok := metricsFlavors[flavor]
	if !ok {
		return nil, nil, fmt.Errorf("unknown metrics flavor %q (known: %s)", flavor, strings.Join(MetricsFlavors(), ", "))
	}
	reg := prometheus.NewRegistry()
	rec, err := mk(reg, info)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics flavor %s: %w", flavor, err)
	}
	return reg, rec, nil
}

// register registers every collector, stopping at the first error.
func registerAll(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// buckets125 is vLLM's build_1_2_5_buckets(max): 1, 2, 5, 10, 20, 50, …
// while the value stays ≤ max.
// TokenBuckets are vLLM's bucket edges for its per-request token
// histograms (vllm:request_prompt_tokens and the like) on a model of
// maxModelLen tokens: 1, 2, 5, 10, 20, 50, … up to maxModelLen.
func TokenBuckets(maxModelLen int) []float64 { return buckets125(maxModelLen) }

func buckets125(max int) []float64 {
	var out []float64
	for exp := 1; ; exp *= 10 {
		for _, m := range []int{1, 2, 5} {
			v := m * exp
			if v > max {
				return out
			}
			out = append(out, float64(v))
		}
	}
}

// linearBuckets is n buckets of width max÷n: max/n, 2·max/n, …, max.
func linearBuckets(max float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = max / float64(n) * float64(i+1)
	}
	return out
}
