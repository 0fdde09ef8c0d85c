package knee

import "math"

// Unknown returns the value that marks a quantity as unknown (NaN).
func Unknown() float64 { return math.NaN() }

// Known reports whether v is a measured, finite value.
func Known(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// LatencyQuantiles are windowed latency quantiles in seconds; any may be unknown.
type LatencyQuantiles struct {
	P50, P90, P99 float64
}

// At returns the quantile q when it is one of those held (0.5, 0.9, 0.99),
// and Unknown otherwise.
func (l LatencyQuantiles) At(q float64) float64 {
	const eps = 1e-9
	switch {
	case math.Abs(q-0.5) < eps:
		return l.P50
	case math.Abs(q-0.9) < eps:
		return l.P90
	case math.Abs(q-0.99) < eps:
		return l.P99
	}
	return Unknown()
}

// Observation is one replica's operating point over the evaluation window,
// as the collector measured it. Counts are window means, rates are per
// second over the window, ratios are 0..1, latencies are seconds. Any field
// may be unknown (see Known).
type Observation struct {
	// InFlight is the mean in-flight load, running + waiting. When unknown,
	// Load derives it from Running and Waiting.
	InFlight float64
	Running  float64 // mean requests in the running batch
	Waiting  float64 // mean requests queued for admission
	// RunningSamples are the running batch's sizes as sampled over the
	// window, oldest first; nil when not kept. Running is their mean unless
	// the collector read it by Little's law. A replica's speed is judged on
	// the bend of the curve they span (see Result.ThroughputEfficiency): the
	// curve is concave, and read at the mean alone it expected more of a
	// fluctuating batch than any GPU makes.
	RunningSamples []float64

	OutputTokensPerSecond float64
	PromptTokensPerSecond float64
	RequestsPerSecond     float64 // finished requests

	KVCacheUsage         float64 // mean KV-cache usage, 0..1
	PreemptionsPerSecond float64

	TTFT LatencyQuantiles
	TPOT LatencyQuantiles

	// Attainment is the share of the window's requests whose TTFT (TPOT) was
	// within the profile's SLO threshold, 0..1.
	TTFTAttainment float64
	TPOTAttainment float64

	// QueueGrowthPerSecond is the slope of the waiting queue over the
	// window, in requests per second; negative when it drains.
	QueueGrowthPerSecond float64

	// Observed mean tokens per request over the window, for mix drift.
	MeanPromptTokens float64
	MeanOutputTokens float64
	// MixRequests is how many finished requests the means are taken over;
	// unknown when not counted. Mix drift is judged only over at least
	// MinMixRequests (see Result.MixDrift).
	MixRequests float64
	// PromptTokensP99 is the 99th percentile of the window's prompt
	// tokens per request, from the engine's prompt-length histogram;
	// unknown without one, or over fewer than 100 requests.
	PromptTokensP99 float64
	// SpanPromptTokensP99 is the same percentile read over the replica's
	// recent history, up to about a thousand requests (see
	// collector.PromptTailHistory), and SpanPromptRequests how many
	// prompts it was read over; both unknown without one. A heavy minority
	// that one window's hundred requests cannot tell from chance stands
	// out over ten times as many.
	SpanPromptTokensP99 float64
	SpanPromptRequests  float64

	GPUUtilization float64 // 0..1
}

// NewObservation returns an Observation with every field unknown.
func NewObservation() Observation {
	nan := Unknown()
	return Observation{
		InFlight: nan, Running: nan, Waiting: nan,
		OutputTokensPerSecond: nan, PromptTokensPerSecond: nan, RequestsPerSecond: nan,
		KVCacheUsage: nan, PreemptionsPerSecond: nan,
		TTFT:           LatencyQuantiles{nan, nan, nan},
		TPOT:           LatencyQuantiles{nan, nan, nan},
		TTFTAttainment: nan, TPOTAttainment: nan,
		QueueGrowthPerSecond: nan,
		MeanPromptTokens:     nan, MeanOutputTokens: nan, MixRequests: nan, PromptTokensP99: nan,
		SpanPromptTokensP99: nan, SpanPromptRequests: nan,
		GPUUtilization: nan,
	}
}

// Load is the mean in-flight load: InFlight when known, else Running +
// Waiting when both are known, else unknown.
func (o *Observation) Load() float64 {
	if Known(o.InFlight) {
		return o.InFlight
	}
	if Known(o.Running) && Known(o.Waiting) {
		return o.Running + o.Waiting
	}
	return Unknown()
}

// PrefillShare is the prompt tokens' share of all tokens processed,
// prompt ÷ (prompt + output) tokens per second. A high share means prefill
// waves, which raise TTFT while the KV cache stays low. Unknown when either
// rate is unknown or both are zero.
func (o *Observation) PrefillShare() float64 {
	p, out := o.PromptTokensPerSecond, o.OutputTokensPerSecond
	if !nonNegative(p) || !nonNegative(out) || p+out == 0 {
		return Unknown()
	}
	return p / (p + out)
}

// nonNegative reports whether v is known and ≥ 0. Rates, counts and ratios
// below zero are collector bugs (a missed counter reset), not measurements.
func nonNegative(v float64) bool { return Known(v) && v >= 0 }
