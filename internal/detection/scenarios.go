package detection

import (
	"math"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// The deployments the scenarios run: an 8B model on one H100 (the
// simulator's llama-3.1-8b-h100 preset), profiled for the traffic it serves.
// SLO thresholds are vLLM bucket edges, so histogram burn-rate SLIs can
// count good requests exactly.
var (
	// chatDeployment serves interactive chat: p99 TTFT ≤ 1 s and TPOT ≤ 25 ms
	// (≈40 tokens/s per user). Its knee is compute-bound, at ~half of
	// max_num_seqs.
	chatDeployment = Deployment{Preset: "llama-3.1-8b-h100", Workload: "chat",
		SLO: knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(25 * time.Millisecond), Quantile: 0.99}}
	// ragDeployment serves retrieval-augmented answers (≈2.8k-token prompts,
	// short answers) with a looser SLO: p99 TTFT ≤ 2.5 s, TPOT ≤ 75 ms.
	ragDeployment = Deployment{Preset: "llama-3.1-8b-h100", Workload: "rag",
		SLO: knee.SLO{TTFT: knee.Duration(2500 * time.Millisecond), TPOT: knee.Duration(75 * time.Millisecond), Quantile: 0.99}}
	// longContextDeployment serves 8–16k-token prompts with long answers:
	// p99 TTFT ≤ 5 s (a lone prompt takes ~0.5–1 s to prefill), TPOT ≤ 75 ms.
	// Its knee is where the KV cache runs out.
	longContextDeployment = Deployment{Preset: "llama-3.1-8b-h100", Workload: "long-context",
		SLO: knee.SLO{TTFT: knee.Duration(5 * time.Second), TPOT: knee.Duration(75 * time.Millisecond), Quantile: 0.99}}
)

// calm is how long every scenario that breaks its SLO runs quietly first:
// longer than a detector's hold plus the lead horizon, so an alert that
// fires on ordinary traffic shows up as a false page rather than as a
// warning of the breach, and the burn-rate windows start with a history of
// good requests, as on a replica that has been serving for a while.
const calm = 20 * time.Minute

// Scenarios returns the seven scripted scenarios. Loads are multiples of the
// request rate each deployment's knee sustains.
func Scenarios() []Scenario {
	return []Scenario{
		{
			ID: 1, Name: "steady-ramp", Deployment: chatDeployment, Duration: calm + 30*time.Minute,
			Description: "chat traffic steady at 0.3× the knee rate for 20 min, then ramping linearly to 1.4× over 30 min",
			Load:        ramp(0.3, 1.4, calm, 30*time.Minute),
		},
		{
			ID: 2, Name: "prefill-wave", Deployment: ragDeployment, Duration: calm + 35*time.Minute,
			Description: "RAG traffic (long prompts, short answers) at 0.3× for 20 min, a wave to 1.3× over 12 min, 3 min at the crest, back to 0.3× over 12 min",
			Load:        piecewise(0, 0.3, 20, 0.3, 32, 1.3, 35, 1.3, 47, 0.3, 55, 0.3),
		},
		{
			ID: 3, Name: "long-context-ramp", Deployment: longContextDeployment, Duration: calm + 40*time.Minute,
			// The hold matters: at under one request a second, a windowed
			// p99 reaches back up to 10 min, so the breach trails the load.
			Description: "long-context traffic (8–16k prompts) at 0.3× for 20 min, ramping to 1.4× over 30 min, held for 10 min: the KV cache fills and requests are preempted",
			Load:        ramp(0.3, 1.4, calm, 30*time.Minute),
		},
		{
			ID: 4, Name: "safe-bursts", Deployment: chatDeployment, Duration: 45 * time.Minute, Safe: true,
			Description: "chat at 0.4× with a 90 s burst to 0.8× every 6 min: busy, never past the knee",
			Load:        bursts(0.4, 0.8, 6*time.Minute, 90*time.Second, 15*time.Second),
		},
		{
			ID: 5, Name: "gpu-throttle", Deployment: chatDeployment, Duration: calm + 35*time.Minute,
			Description: "chat at a constant 0.6× while the GPU slows down from 1× to 2× (throttling) over 25 min from minute 20",
			Load:        constant(0.6),
			Slowdown:    ramp(1, 2, calm, 25*time.Minute), SlowdownMax: 2,
		},
		{
			ID: 6, Name: "diurnal", Deployment: chatDeployment, Duration: 60 * time.Minute, Safe: true,
			Description: "a day of chat compressed into an hour: from 0.1× at night to 0.6× at the afternoon peak",
			Load:        diurnal(0.1, 0.6, 60*time.Minute),
		},
		{
			ID: 7, Name: "mix-shift", Deployment: chatDeployment, Duration: calm + 35*time.Minute,
			Description: "a constant 0.4× request rate whose mix shifts from chat to RAG (0 → 30% RAG over 30 min from minute 20)",
			Load:        constant(0.4),
			AltWorkload: "rag", AltShare: ramp(0, 0.3, calm, 30*time.Minute),
		},
	}
}

// piecewise interpolates linearly through (minute, value) pairs given flat
// as m0, v0, m1, v1, …; before the first and after the last it holds.
func piecewise(pairs ...float64) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		m := t.Minutes()
		if m <= pairs[0] {
			return pairs[1]
		}
		for i := 2; i+1 < len(pairs); i += 2 {
			if m <= pairs[i] {
				m0, v0, m1, v1 := pairs[i-2], pairs[i-1], pairs[i], pairs[i+1]
				return v0 + (v1-v0)*(m-m0)/(m1-m0)
			}
		}
		return pairs[len(pairs)-1]
	}
}

// bursts is base load with a burst to peak of the given length every
// period (the first one period in), with linear edges of the given length.
func bursts(base, peak float64, period, length, edge time.Duration) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		if t < period {
			return base
		}
		in := t % period
		switch {
		case in < edge:
			return base + (peak-base)*float64(in)/float64(edge)
		case in < length-edge:
			return peak
		case in < length:
			return peak - (peak-base)*float64(in-(length-edge))/float64(edge)
		}
		return base
	}
}

// diurnal is a day compressed into length: low at the start (night), peak
// half way through, low again at the end.
func diurnal(low, peak float64, length time.Duration) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		phase := 2 * math.Pi * float64(t) / float64(length)
		return low + (peak-low)*(1-math.Cos(phase))/2
	}
}
