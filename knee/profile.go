package knee

import (
	"time"

	"github.com/kneewatch/kneewatch/workload"
)

// APIVersion and Kind identify a knee profile document.
const (
	APIVersion = "kneewatch.dev/v1"
	Kind       = "KneeProfile"
)

// Profile is schema v1 of a knee profile: what it matches, the SLO it was
// measured against, the workload mix, every sweep point, the knee and,
// optionally, how the knee moves with the mix.
type Profile struct {
	APIVersion string       `yaml:"apiVersion" json:"apiVersion"`
	Kind       string       `yaml:"kind" json:"kind"`
	Metadata   Metadata     `yaml:"metadata" json:"metadata"`
	Match      Match        `yaml:"match" json:"match"`
	SLO        SLO          `yaml:"slo" json:"slo"`
	Workload   WorkloadInfo `yaml:"workload" json:"workload"`
	Sweep      SweepInfo    `yaml:"sweep" json:"sweep"`
	Points     []Point      `yaml:"points" json:"points"`
	Knee       Knee         `yaml:"knee" json:"knee"`
	// MixModel, when present, says how the knee moves when the mean prompt
	// and output lengths move away from the workload's (see MixModel).
	// Profiles without it behave as before it existed.
	MixModel *MixModel `yaml:"mixModel,omitempty" json:"mixModel,omitempty"`
	// SpeedModel, when present, says where the knee lies on a slower GPU
	// (see SpeedModel).
	SpeedModel *SpeedModel `yaml:"speedModel,omitempty" json:"speedModel,omitempty"`
}

// Metadata names the profile and says when it was made.
type Metadata struct {
	Name      string    `yaml:"name" json:"name"`
	CreatedAt time.Time `yaml:"createdAt" json:"createdAt"`
	// Partial is true when the sweep was interrupted: the knee may be a lower bound.
	Partial bool `yaml:"partial,omitempty" json:"partial,omitempty"`
}

// Match says which replicas the profile describes.
type Match struct {
	Model         string `yaml:"model" json:"model"`
	GPU           string `yaml:"gpu,omitempty" json:"gpu,omitempty"` // DCGM modelName, e.g. "NVIDIA H100 80GB HBM3"
	Engine        string `yaml:"engine,omitempty" json:"engine,omitempty"`
	EngineVersion string `yaml:"engineVersion,omitempty" json:"engineVersion,omitempty"`
}

// SLO is the latency contract the knee was measured against: the Quantile of
// TTFT and of TPOT must stay at or under the thresholds.
type SLO struct {
	TTFT     Duration `yaml:"ttft" json:"ttft"`
	TPOT     Duration `yaml:"tpot" json:"tpot"`
	Quantile float64  `yaml:"quantile" json:"quantile"`
}

// WorkloadInfo is the request mix the sweep used, with its observed means so
// live traffic can be compared against it (mix drift).
type WorkloadInfo struct {
	workload.Mix     `yaml:",inline" json:",inline"`
	Source           string  `yaml:"source,omitempty" json:"source,omitempty"` // preset name, mix file or trace path
	MeanPromptTokens float64 `yaml:"meanPromptTokens" json:"meanPromptTokens"`
	MeanOutputTokens float64 `yaml:"meanOutputTokens" json:"meanOutputTokens"`
	// P999PromptTokens is the mix's 99.9th percentile of prompt tokens per
	// request (its longest prompt, from fewer than 1,000 requests): the
	// reference a live prompt tail is read against (see
	// Profile.mixShiftAt); 0 when the profile predates it.
	P999PromptTokens float64 `yaml:"p999PromptTokens,omitempty" json:"p999PromptTokens,omitempty"`
	// PromptTokensCV and OutputTokensCV are the coefficients of variation
	// (standard deviation ÷ mean) of the prompt and output tokens per
	// request the knee was measured with: how noisy a live window's mean
	// is when the mix has not moved (see Profile.mixNoiseBands). 0 when
	// the profile predates them; the distributions are read then, if any.
	PromptTokensCV float64 `yaml:"promptTokensCV,omitempty" json:"promptTokensCV,omitempty"`
	OutputTokensCV float64 `yaml:"outputTokensCV,omitempty" json:"outputTokensCV,omitempty"`
}

// SweepInfo records how the curve was measured.
type SweepInfo struct {
	Tool       string    `yaml:"tool" json:"tool"`                         // "kneewatch sweep" or "kneewatch sim knee"
	Target     string    `yaml:"target,omitempty" json:"target,omitempty"` // URL or simulator preset
	StartedAt  time.Time `yaml:"startedAt" json:"startedAt"`
	FinishedAt time.Time `yaml:"finishedAt" json:"finishedAt"`
	Levels     []int     `yaml:"levels,flow" json:"levels"` // concurrencies in the order they were run
	// RateLevels are, for a poisson knee, the steady Poisson request rates
	// (requests/s) tried for it, in the order they were run.
	RateLevels []float64 `yaml:"rateLevels,omitempty,flow" json:"rateLevels,omitempty"`
}

// Point is one measured concurrency level. Latencies are in seconds, ratios 0..1.
type Point struct {
	Concurrency            float64   `yaml:"concurrency" json:"concurrency"`
	Requests               int       `yaml:"requests" json:"requests"` // completed requests in the steady-state window
	RequestsPerSecond      float64   `yaml:"requestsPerSecond" json:"requestsPerSecond"`
	OutputTokensPerSecond  float64   `yaml:"outputTokensPerSecond" json:"outputTokensPerSecond"`
	GoodputTokensPerSecond float64   `yaml:"goodputTokensPerSecond" json:"goodputTokensPerSecond"`
	TTFT                   Quantiles `yaml:"ttftSeconds,flow" json:"ttftSeconds"`
	TPOT                   Quantiles `yaml:"tpotSeconds,flow" json:"tpotSeconds"`
	KVCacheUsage           float64   `yaml:"kvCacheUsage" json:"kvCacheUsage"`
	GPUUtilization         *float64  `yaml:"gpuUtilization,omitempty" json:"gpuUtilization,omitempty"` // absent when not measured
	PreemptionsPerSecond   float64   `yaml:"preemptionsPerSecond" json:"preemptionsPerSecond"`
	Running                float64   `yaml:"running" json:"running"` // mean running requests (engine metrics)
	Waiting                float64   `yaml:"waiting" json:"waiting"` // mean waiting requests (engine metrics)
	ErrorRate              float64   `yaml:"errorRate" json:"errorRate"`
	MeetsSLO               bool      `yaml:"meetsSLO" json:"meetsSLO"`
}

// Quantiles of a latency, in seconds.
type Quantiles struct {
	P50 float64 `yaml:"p50" json:"p50"`
	P99 float64 `yaml:"p99" json:"p99"`
}

// Resource names what limits a replica at its knee.
type Resource string

// The limiting resources.
const (
	ResourceCompute Resource = "compute"
	ResourceKVCache Resource = "kv_cache"
)

// Arrivals says how the knee was measured.
type Arrivals string

// The ways a knee is measured.
const (
	// ArrivalsClosedLoop: a fixed number of clients, each sending its next
	// request when its last one ends (vllm bench --max-concurrency,
	// GuideLLM's concurrent mode). The knee is a concurrency. Clients pace
	// themselves by the replica, so prefills never bunch up and the queue
	// never grows: it overstates what open traffic can be given.
	ArrivalsClosedLoop Arrivals = "closed-loop"
	// ArrivalsPoisson: steady open-loop Poisson arrivals, as users send. The
	// knee is the largest rate that kept the SLO in every window of a long
	// run, and its concurrency the mean in-flight requests at that rate.
	ArrivalsPoisson Arrivals = "poisson"
)

// Knee is the last operating point that met the SLO.
type Knee struct {
	Concurrency            float64  `yaml:"concurrency" json:"concurrency"`
	OutputTokensPerSecond  float64  `yaml:"outputTokensPerSecond" json:"outputTokensPerSecond"`
	GoodputTokensPerSecond float64  `yaml:"goodputTokensPerSecond" json:"goodputTokensPerSecond"`
	KVCacheUsage           float64  `yaml:"kvCacheUsage" json:"kvCacheUsage"`
	LimitingResource       Resource `yaml:"limitingResource" json:"limitingResource"`
	// Arrivals is how the knee was measured; empty (profiles written before
	// the field existed) means closed-loop.
	Arrivals Arrivals `yaml:"arrivals,omitempty" json:"arrivals,omitempty"`
	// RequestsPerSecond is, for a poisson knee, its arrival rate.
	RequestsPerSecond float64 `yaml:"requestsPerSecond,omitempty" json:"requestsPerSecond,omitempty"`
	// ClosedLoopConcurrency is, for a poisson knee, the closed-loop knee of
	// the same sweep (whose levels are the profile's points), for reference:
	// the gap between the two is what Poisson bunching costs. `kneewatch
	// sweep` stops its closed loop soon after the first break and records
	// where the SLO margin crosses 1 between the last kept and the lowest
	// broken level, interpolated, so it need not be one of the points; the
	// simulator's `sim knee` refines it to a point. A slower GPU's knee is
	// read off the curve relative to it (see speedKnee).
	ClosedLoopConcurrency float64 `yaml:"closedLoopConcurrency,omitempty" json:"closedLoopConcurrency,omitempty"`
}

// ArrivalsOrDefault is k.Arrivals, closed-loop when empty.
func (k Knee) ArrivalsOrDefault() Arrivals {
	if k.Arrivals == "" {
		return ArrivalsClosedLoop
	}
	return k.Arrivals
}
