package detection

import (
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kneewatch/kneewatch/rules"
)

// Detector is one alerting signal the bench scores: it "pages" while any
// instance of any of its alerts fires.
type Detector struct {
	Key    string   // short identifier, stable across runs
	Name   string   // as the table shows it
	Alerts []string // the alerting rules whose firing counts
	// Shipped is true for kneewatch's own generated rules, false for the
	// baselines the bench writes itself.
	Shipped bool
	// Variant marks a what-if: a shipped rule generated with options other
	// than the defaults.
	Variant bool
	// Basis says in a few words what the rule reads.
	Basis string
}

// Detector keys, in table order.
const (
	DetectorKneewatchPage    = "kneewatch-page"
	DetectorKneewatchWarning = "kneewatch-warning"
	DetectorKneewatchBurn    = "kneewatch-burn"
	DetectorRawBurn          = "raw-burn"
	DetectorSaturation       = "saturation"
	DetectorGPUUtil          = "gpu-util"
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
	// baselineFor is the hold of the threshold baselines: the same 5 minutes
	// as kneewatch's page, so a threshold is not made noisier (or slower)
	// than the alert it is compared with.
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

// PageVariant is kneewatch's page generated with other thresholds: a what-if
// that shows how the shipped alert would do configured differently
// (rules.Options.HeadroomExhausted is config, not code).
type PageVariant struct {
	Name    string
	Options rules.HeadroomExhaustedOptions
}

// DefaultPageVariants are the what-ifs the bench reports: the page held for
// 2 minutes instead of 5 (every other threshold the default), and held for
// 1 minute with the trend branch armed from 60% headroom instead of 30%.
func DefaultPageVariants() []PageVariant {
	hold2 := rules.DefaultOptions().HeadroomExhausted
	hold2.For = 2 * time.Minute
	early := rules.DefaultOptions().HeadroomExhausted
	early.For, early.PredictBelow = time.Minute, 0.6
	return []PageVariant{{Name: "for 2m", Options: hold2}, {Name: "for 1m, trend below 60%", Options: early}}
}

// variantAlert names a variant's copy of the page alert.
func variantAlert(v PageVariant) string { return rules.AlertHeadroomExhausted + " [" + v.Name + "]" }

// variantDetector is the detector of a page variant.
func variantDetector(v PageVariant) Detector {
	o := v.Options
	return Detector{
		Key: "kneewatch-page-" + v.Name, Name: "kneewatch page, " + v.Name, Alerts: []string{variantAlert(v)}, Shipped: true, Variant: true,
		Basis: fmt.Sprintf("KneewatchHeadroomExhausted generated with headroom < %g, or < %g and predicted (%s lookback) to reach 0 within %s; for %s",
			o.Below, o.PredictBelow, model.Duration(o.PredictLookback), model.Duration(o.PredictHorizon), model.Duration(o.For)),
	}
}

// Detectors lists every detector, in table order.
func Detectors() []Detector {
	return []Detector{
		{Key: DetectorKneewatchPage, Name: "kneewatch page", Alerts: []string{rules.AlertHeadroomExhausted}, Shipped: true,
			Basis: "KneewatchHeadroomExhausted: headroom < 5%, or < 30% and predicted to reach 0 within 15m; for 5m"},
		{Key: DetectorKneewatchWarning, Name: "kneewatch warning", Alerts: []string{rules.AlertHeadroomLow}, Shipped: true,
			Basis: "KneewatchHeadroomLow: headroom < 20% for 10m (a ticket, not a page)"},
		{Key: DetectorKneewatchBurn, Name: "burn rate (kneewatch counters)", Alerts: []string{rules.AlertGoodputSLOBurnFast}, Shipped: true,
			Basis: "KneewatchGoodputSLOBurnFast: 14.4× over 1h and 5m, or 6× over 6h and 30m, on kneewatch's good/total request counters; for 2m"},
		{Key: DetectorRawBurn, Name: "burn rate (raw histograms)", Alerts: []string{alertRawBurn},
			Basis: "sloth-style: TTFT or TPOT error ratio from vLLM's histograms over the SLO bucket, 14.4× over 1h and 5m, or 6× over 6h and 30m; no for"},
		{Key: DetectorSaturation, Name: "KV ≥ 0.8 or queue ≥ 5", Alerts: []string{alertSaturation},
			Basis: "vllm:kv_cache_usage_perc ≥ 0.8 or vllm:num_requests_waiting ≥ 5 (Gateway API inference extension / llm-d defaults); for 5m"},
		{Key: DetectorGPUUtil, Name: "GPU util ≥ 90%", Alerts: []string{alertGPUUtil},
			Basis: "DCGM_FI_DEV_GPU_UTIL ≥ 90; for 5m"},
	}
}

// detectorRules returns the rule groups every detector is evaluated
// through, in evaluation order: the recording rules kneewatch's chosen
// alerts read and those alerts, exactly as rules.Generate ships them with
// its default options, then the baselines for the deployment's SLO.
func detectorRules(dep Deployment, variants []PageVariant) ([]rulefmt.RuleGroup, error) {
	shipped, err := shippedRules()
	if err != nil {
		return nil, err
	}
	base, err := baselineRules(dep)
	if err != nil {
		return nil, err
	}
	groups := append(shipped, base)
	if len(variants) > 0 {
		g, err := variantRules(variants)
		if err != nil {
			return nil, err
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// variantRules generates kneewatch's page once per variant, each with the
// default options but the variant's HeadroomExhausted, renamed so their
// alert states stay apart.
func variantRules(variants []PageVariant) (rulefmt.RuleGroup, error) {
	g := rulefmt.RuleGroup{Name: "page-variants"}
	for _, v := range variants {
		o := rules.DefaultOptions()
		o.HeadroomExhausted = v.Options
		// The warning must stay less urgent than the page; only the page
		// is taken from this generation.
		if o.HeadroomLow.Below <= v.Options.Below {
			o.HeadroomLow.Below = min(v.Options.Below+0.1, 0.95)
		}
		groups, err := rules.Generate(o)
		if err != nil {
			return g, fmt.Errorf("page variant %s: %w", v.Name, err)
		}
		found := false
		for _, gr := range groups {
			for _, r := range gr.Rules {
				if r.Alert == rules.AlertHeadroomExhausted {
					r.Alert = variantAlert(v)
					g.Rules = append(g.Rules, r)
					found = true
				}
			}
		}
		if !found {
			return g, fmt.Errorf("page variant %s: no %s among the generated rules", v.Name, rules.AlertHeadroomExhausted)
		}
	}
	return g, nil
}

// shippedRules picks kneewatch's generated alerts the detectors use and
// every recording rule they read, directly or through other recording rules.
func shippedRules() ([]rulefmt.RuleGroup, error) {
	groups, err := rules.Generate(rules.DefaultOptions())
	if err != nil {
		return nil, fmt.Errorf("generating kneewatch's rules: %w", err)
	}
	var want []string
	for _, d := range Detectors() {
		if d.Shipped {
			want = append(want, d.Alerts...)
		}
	}
	p := parser.NewParser(parser.Options{})
	needed := map[string]bool{}
	var alerts []rulefmt.Rule
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert != "" && slices.Contains(want, r.Alert) {
				alerts = append(alerts, r)
				names, err := metricNames(p, r.Expr)
				if err != nil {
					return nil, fmt.Errorf("alert %s: %w", r.Alert, err)
				}
				for _, n := range names {
					needed[n] = true
				}
			}
		}
	}
	if len(alerts) != len(want) {
		return nil, fmt.Errorf("kneewatch's rules define %d of the alerts %v", len(alerts), want)
	}
	// Recording rules feed each other; walk back until nothing new is needed.
	for changed := true; changed; {
		changed = false
		for _, g := range groups {
			for _, r := range g.Rules {
				if r.Record == "" || !needed[r.Record] {
					continue
				}
				names, err := metricNames(p, r.Expr)
				if err != nil {
					return nil, fmt.Errorf("recording rule %s: %w", r.Record, err)
				}
				for _, n := range names {
					if !needed[n] {
						needed[n], changed = true, true
					}
				}
			}
		}
	}
	var out []rulefmt.RuleGroup
	for _, g := range groups {
		var rs []rulefmt.Rule
		for _, r := range g.Rules {
			if r.Record != "" && needed[r.Record] {
				rs = append(rs, r)
			}
		}
		if len(rs) > 0 {
			out = append(out, rulefmt.RuleGroup{Name: g.Name, Rules: rs})
		}
	}
	return append(out, rulefmt.RuleGroup{Name: "kneewatch-alerts", Rules: alerts}), nil
}

// metricNames lists the metric names an expression selects.
func metricNames(p parser.Parser, expr string) ([]string, error) {
	e, err := p.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && vs.Name != "" {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names, nil
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
			Expr: binaryOp(parser.LOR,
				binaryOp(parser.GTE, metric("vllm:kv_cache_usage_perc"), number(saturationKV)),
				binaryOp(parser.GTE, metric("vllm:num_requests_waiting"), number(saturationQueue))).String()},
		rulefmt.Rule{Alert: alertGPUUtil, For: model.Duration(baselineFor), Labels: severity,
			Expr: binaryOp(parser.GTE, metric("DCGM_FI_DEV_GPU_UTIL"), number(gpuUtilPercent)).String()},
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
			total := sumOf(rateOver(metric(sli.histogram+"_count"), w))
			good := sumOf(rateOver(metric(sli.histogram+"_bucket", labelIs("le", sli.le)), w))
			rs = append(rs, rulefmt.Rule{
				Record: sliErrorRecord(w),
				Labels: map[string]string{"sloth_service": "vllm", "sloth_slo": sli.name},
				Expr:   binaryOp(parser.DIV, binaryOp(parser.SUB, total, good), total).String(),
			})
		}
	}
	// sloth's page alert: any window pair over its burn factor × the budget.
	budget := 1 - burnObjective
	by := []string{"sloth_service", "sloth_slo"}
	var alert parser.Expr
	for _, w := range burnWindows {
		over := func(window time.Duration) parser.Expr {
			return maxByLabels(by, binaryOp(parser.GTR, metric(sliErrorRecord(window)),
				binaryOp(parser.MUL, number(w.factor), number(roundBudget(budget)))))
		}
		pair := binaryOp(parser.LAND, over(w.short), over(w.long))
		if alert == nil {
			alert = pair
		} else {
			alert = binaryOp(parser.LOR, alert, pair)
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
