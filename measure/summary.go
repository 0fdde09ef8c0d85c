package measure

import (
	"math"
	"slices"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// MaxErrorRate is the share of failed requests above which a level counts as
// past the knee whatever its latencies: a replica shedding load is not
// meeting its SLO.
const MaxErrorRate = 0.01

// Sample is one request of a level's window.
type Sample struct {
	// TTFT runs from sending the request to its first token; TPOT is
	// (E2E − TTFT) ÷ (output tokens − 1), and HasTPOT is false for a
	// single-token request, which has none.
	TTFT, TPOT time.Duration
	HasTPOT    bool
	// OutputTokens the request produced.
	OutputTokens int
	// Failed requests count against the error budget and nothing else.
	Failed bool
}

// Summary is what a level's window says.
type Summary struct {
	// Point holds the requests completed and their rate, output tokens/s,
	// goodput, TTFT and TPOT p50/p99, the error rate and the SLO verdict.
	// Concurrency and the engine's own figures are the caller's to fill.
	Point knee.Point
	// Margin is the larger of TTFT ÷ its threshold and TPOT ÷ its
	// threshold, both at the SLO quantile: at most 1 meets the latency SLO
	// (+Inf when no request completed). The search interpolates on it.
	Margin float64
	// TTFTAtQuantile and TPOTAtQuantile are the SLO quantile's values, in seconds.
	TTFTAtQuantile, TPOTAtQuantile float64
	Errors                         int
}

// Summarize judges a level's window of samples, window long. Throughput is
// tokensPerSecond when the caller knows the tokens produced in the window
// (the simulator's engine does), else (tokensPerSecond < 0) the completed
// requests' output tokens ÷ the window. Goodput is that throughput times
// the share of the completed requests' tokens that belong to requests
// meeting every SLO threshold (a single-token request is judged on TTFT),
// as vllm bench's goodput counts it. The level meets the SLO when the SLO
// quantile of TTFT and of TPOT are within their thresholds and at most
// MaxErrorRate of the requests failed.
func Summarize(samples []Sample, window time.Duration, tokensPerSecond float64, slo knee.SLO) Summary {
	var s Summary
	ttfts := make([]float64, 0, len(samples))
	tpots := make([]float64, 0, len(samples))
	var tokens, good int
	for _, r := range samples {
		if r.Failed {
			s.Errors++
			continue
		}
		ttft := r.TTFT.Seconds()
		ttfts = append(ttfts, ttft)
		ok := ttft <= slo.TTFT.Seconds()
		if r.HasTPOT {
			tpots = append(tpots, r.TPOT.Seconds())
			ok = ok && r.TPOT.Seconds() <= slo.TPOT.Seconds()
		}
		tokens += r.OutputTokens
		if ok {
			good += r.OutputTokens
		}
	}
	slices.Sort(ttfts)
	slices.Sort(tpots)
	completed := len(ttfts)
	pt := knee.Point{Requests: completed}
	if sec := window.Seconds(); sec > 0 {
		if tokensPerSecond < 0 {
			tokensPerSecond = float64(tokens) / sec
		}
		pt.RequestsPerSecond = float64(completed) / sec
		pt.OutputTokensPerSecond = tokensPerSecond
		pt.GoodputTokensPerSecond = tokensPerSecond * float64(good) / float64(max(tokens, 1))
	}
	pt.TTFT = knee.Quantiles{P50: knee.SampleQuantile(ttfts, 0.5), P99: knee.SampleQuantile(ttfts, 0.99)}
	pt.TPOT = knee.Quantiles{P50: knee.SampleQuantile(tpots, 0.5), P99: knee.SampleQuantile(tpots, 0.99)}
	if n := len(samples); n > 0 {
		pt.ErrorRate = float64(s.Errors) / float64(n)
	}
	s.TTFTAtQuantile, s.TPOTAtQuantile = knee.SampleQuantile(ttfts, slo.Quantile), knee.SampleQuantile(tpots, slo.Quantile)
	s.Margin = max(s.TTFTAtQuantile/slo.TTFT.Seconds(), s.TPOTAtQuantile/slo.TPOT.Seconds())
	if completed == 0 {
		s.Margin = math.Inf(1)
	}
	pt.MeetsSLO = completed > 0 && s.Margin <= 1 && pt.ErrorRate <= MaxErrorRate
	s.Point = pt
	return s
}
