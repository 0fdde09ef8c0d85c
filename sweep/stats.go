package sweep

import (
	"math"
	"time"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
)

// MaxErrorRate is measure.MaxErrorRate: the share of failed requests above
// which a level counts as past the knee whatever its latencies.
const MaxErrorRate = measure.MaxErrorRate

// windowStats is what the requests of one level's steady-state window say,
// before the engine metrics are added.
type windowStats struct {
	point  knee.Point
	margin float64 // see Level.Margin
	ttftQ  float64 // seconds at the SLO quantile
	tpotQ  float64
	errors int
	// promptMismatch counts requests whose usage reports a prompt length
	// other than the one asked for; outputShort those that returned fewer
	// output tokens than max_tokens.
	promptMismatch, outputShort int
}

// sample is a request's result as the measurement engine judges it: TTFT
// from sending the request to the first content chunk and TPOT (E2E −
// TTFT) ÷ (output tokens − 1), both as vllm bench defines them, with token
// counts from the response's usage.
func sample(r Result) measure.Sample {
	if r.Err != nil {
		return measure.Sample{Failed: true}
	}
	tpot, has := r.TPOT()
	return measure.Sample{TTFT: r.TTFT, TPOT: tpot, HasTPOT: has, OutputTokens: r.OutputTokens}
}

// summarize turns a window's results into a profile point by the
// measurement engine's one rule (measure.Summarize): throughput is the
// output tokens of the window's successful requests ÷ the window's length,
// goodput counts only the tokens of requests that met every SLO threshold,
// and errors count against the level.
func summarize(results []Result, d time.Duration, slo knee.SLO) windowStats {
	var st windowStats
	samples := make([]measure.Sample, len(results))
	for i, r := range results {
		samples[i] = sample(r)
		if r.Err != nil {
			continue
		}
		if r.PromptTokens != r.Request.PromptTokens {
			st.promptMismatch++
		}
		if r.OutputTokens < r.Request.MaxTokens {
			st.outputShort++
		}
	}
	sum := measure.Summarize(samples, d, -1, slo)
	st.point, st.margin, st.errors = sum.Point, sum.Margin, sum.Errors
	st.ttftQ, st.tpotQ = sum.TTFTAtQuantile, sum.TPOTAtQuantile
	return st
}

// round rounds a point's figures for people reading the profile:
// latencies to the microsecond, rates to a thousandth, means and ratios to
// a millionth.
func round(pt *knee.Point) {
	for _, x := range []*float64{&pt.TTFT.P50, &pt.TTFT.P99, &pt.TPOT.P50, &pt.TPOT.P99} {
		*x = math.Round(*x*1e6) / 1e6
	}
	for _, x := range []*float64{&pt.RequestsPerSecond, &pt.OutputTokensPerSecond, &pt.GoodputTokensPerSecond, &pt.PreemptionsPerSecond} {
		*x = math.Round(*x*1e3) / 1e3
	}
	for _, x := range []*float64{&pt.KVCacheUsage, &pt.Running, &pt.Waiting, &pt.ErrorRate} {
		*x = math.Round(*x*1e6) / 1e6
	}
	if pt.GPUUtilization != nil {
		v := math.Round(*pt.GPUUtilization*1e6) / 1e6
		pt.GPUUtilization = &v
	}
}
