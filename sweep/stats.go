package sweep

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

// summarize turns a window's results into a profile point. Per request,
// TTFT runs from sending the request to the first content chunk and TPOT is
// (E2E − TTFT) ÷ (output tokens − 1), both as vllm bench defines them, with
// token counts from the response's usage. Throughput is the output tokens
// of the window's successful requests ÷ the window's length; goodput counts
// only the tokens of requests that met every SLO threshold (a single-token
// request has no TPOT and is judged on TTFT), as vllm bench's goodput does.
// The level meets the SLO when the SLO quantile of TTFT and of TPOT are
// within their thresholds and at most MaxErrorRate of the requests failed.
func summarize(results []Result, d time.Duration, slo knee.SLO) windowStats {
	var st windowStats
	ttfts := make([]float64, 0, len(results))
	tpots := make([]float64, 0, len(results))
	var tokens, good int
	for _, r := range results {
		if r.Err != nil {
			st.errors++
			continue
		}
		if r.PromptTokens != r.Request.PromptTokens {
			st.promptMismatch++
		}
		if r.OutputTokens < r.Request.MaxTokens {
			st.outputShort++
		}
		ttft := r.TTFT.Seconds()
		ttfts = append(ttfts, ttft)
		ok := ttft <= slo.TTFT.Seconds()
		if tpot, has := r.TPOT(); has {
			tpots = append(tpots, tpot.Seconds())
			ok = ok && tpot.Seconds() <= slo.TPOT.Seconds()
		}
		tokens += r.OutputTokens
		if ok {
			good += r.OutputTokens
		}
	}
	slices.Sort(ttfts)
	slices.Sort(tpots)
	sec := d.Seconds()
	ok := len(ttfts)
	pt := knee.Point{Requests: ok}
	if sec > 0 {
		pt.RequestsPerSecond = float64(ok) / sec
		pt.OutputTokensPerSecond = float64(tokens) / sec
		pt.GoodputTokensPerSecond = float64(good) / sec
	}
	pt.TTFT = knee.Quantiles{P50: knee.SampleQuantile(ttfts, 0.5), P99: knee.SampleQuantile(ttfts, 0.99)}
	pt.TPOT = knee.Quantiles{P50: knee.SampleQuantile(tpots, 0.5), P99: knee.SampleQuantile(tpots, 0.99)}
	if n := len(results); n > 0 {
		pt.ErrorRate = float64(st.errors) / float64(n)
	}
	st.ttftQ, st.tpotQ = knee.SampleQuantile(ttfts, slo.Quantile), knee.SampleQuantile(tpots, slo.Quantile)
	st.margin = max(st.ttftQ/slo.TTFT.Seconds(), st.tpotQ/slo.TPOT.Seconds())
	if ok == 0 {
		st.margin = math.Inf(1)
	}
	pt.MeetsSLO = ok > 0 && st.margin <= 1 && pt.ErrorRate <= MaxErrorRate
	st.point = pt
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
