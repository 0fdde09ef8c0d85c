package detection

import (
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kneewatch/kneewatch/pql"
)

// Baseline alert names (the bench's own rules).
const (
	alertSaturation = "BaselineSaturation"
	alertGPUUtil    = "BaselineGPUUtilizationHigh"
	alertRawBurn    = "BaselineSLOBurnRate"
)

// Baseline thresholds. The saturation pair is the default of the Gateway
// API inference extension's saturation detector (DefaultQueueDepthThreshold
// 5, DefaultKVCacheUtilThreshold 0.8), which llm-d's autoscaler also uses.
const (
	saturationKV    = 0.8
	saturationQueue = 5
	gpuUtilPercent  = 90
	// baselineFor is the hold of the threshold baselines: 5 minutes, what
	// kneewatch's page held when the baselines were written, and a common
	// `for` on saturation alerts. kneewatch's page now holds 30s on a
	// headroom averaged over 100 requests; the baselines keep theirs so the
	// report's columns stay comparable across runs.
	baselineFor = 5 * time.Minute
	// burnObjective is the raw burn-rate SLO objective: a p99 latency SLO is
	// 99% of requests under the threshold.
	burnObjective = 0.99
)

// burnWindows are sloth's page windows for a 30-day SLO period (its
// google-30d windows: 2% of the budget in 1h, 5% in 6h), which are also
// kneewatch's page windows.
var burnWindows = []struct {
	long, short time.Duration
	factor      float64
}{
	{time.Hour, 5 * time.Minute, 14.4},
	{6 * time.Hour, 30 * time.Minute, 6},
}

// baselineRules are the thresholds and burn-rate alerts teams use today,
// written as the tools that generate them do, for dep's SLO.
func baselineRules(dep Deployment) (rulefmt.RuleGroup, error) {
	ttftLE, err := bucketEdge(vllmTTFTBuckets, dep.SLO.TTFT.Seconds(), "TTFT")
	if err != nil {
		return rulefmt.RuleGroup{}, err
	}
	tpotLE, err := bucketEdge(vllmTPOTBuckets, dep.SLO.TPOT.Seconds(), "TPOT")
	if err != nil {
		return rulefmt.RuleGroup{}, err
	}
	severity := map[string]string{"severity": "critical"}
	var rs []rulefmt.Rule
	rs = append(rs,
		rulefmt.Rule{Alert: alertSaturation, For: model.Duration(baselineFor), Labels: severity,
			Expr: pql.Or(
				pql.Gte(pql.Selector("vllm:kv_cache_usage_perc"), pql.Num(saturationKV)),
				pql.Gte(pql.Selector("vllm:num_requests_waiting"), pql.Num(saturationQueue))).String()},
		rulefmt.Rule{Alert: alertGPUUtil, For: model.Duration(baselineFor), Labels: severity,
			Expr: pql.Gte(pql.Selector("DCGM_FI_DEV_GPU_UTIL"), pql.Num(gpuUtilPercent)).String()},
	)

	// sloth's SLI recording rules: the error ratio of each latency SLI over
	// every window its page alert reads, the errors being the requests
	// outside the SLO bucket: (total − good) ÷ total.
	slis := []struct{ name, histogram, le string }{
		{"ttft", "vllm:time_to_first_token_seconds", ttftLE},
		{"tpot", "vllm:request_time_per_output_token_seconds", tpotLE},
	}
	var windows []time.Duration
	for _, w := range burnWindows {
		windows = append(windows, w.short, w.long)
	}
	slices.Sort(windows)
	for _, sli := range slis {
		for _, w := range windows {
			total := pql.SumBy(nil, pql.Rate(pql.Selector(sli.histogram+"_count"), w))
			good := pql.SumBy(nil, pql.Rate(pql.Selector(sli.histogram+"_bucket", pql.Equal("le", sli.le)), w))
			rs = append(rs, rulefmt.Rule{
				Record: sliErrorRecord(w),
				Labels: map[string]string{"sloth_service": "vllm", "sloth_slo": sli.name},
				Expr:   pql.Div(pql.Sub(total, good), total).String(),
			})
		}
	}
	// sloth's page alert: any window pair over its burn factor × the budget.
	budget := 1 - burnObjective
	by := []string{"sloth_service", "sloth_slo"}
	var alert parser.Expr
	for _, w := range burnWindows {
		over := func(window time.Duration) parser.Expr {
			return pql.MaxBy(by, pql.Gt(pql.Selector(sliErrorRecord(window)),
				pql.Mul(pql.Num(w.factor), pql.Num(roundBudget(budget)))))
		}
		pair := pql.And(over(w.short), over(w.long))
		if alert == nil {
			alert = pair
		} else {
			alert = pql.Or(alert, pair)
		}
	}
	rs = append(rs, rulefmt.Rule{Alert: alertRawBurn, Labels: severity, Expr: alert.String()})
	return rulefmt.RuleGroup{Name: "baselines", Rules: rs}, nil
}

func sliErrorRecord(w time.Duration) string {
	return "slo:sli_error:ratio_rate" + model.Duration(w).String()
}

// roundBudget removes float noise from 1 − objective (1 − 0.99 is 0.010000000000000009).
func roundBudget(b float64) float64 {
	const scale = 1e12
	return float64(int64(b*scale+0.5)) / scale
}

// bucketEdge returns the le label value of the bucket whose edge is the SLO
// threshold: a histogram-based SLI counts good requests as one bucket, so
// the threshold must be an edge.
func bucketEdge(edges []float64, threshold float64, what string) (string, error) {
	for _, e := range edges {
		if e == threshold {
			return formatBound(e), nil
		}
	}
	return "", fmt.Errorf("the %s SLO threshold %gs is not one of vLLM's bucket edges %v: a histogram burn-rate SLI needs one", what, threshold, edges)
}
