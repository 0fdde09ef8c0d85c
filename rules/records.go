package rules

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/pql"
)

// Recording rule names. Windows are part of the name, Prometheus-style.
func errorRatioRecord(w time.Duration) string {
	return recordPrefix + "replica_slo_error_ratio:rate" + dur(w)
}

func modelErrorRatioRecord(w time.Duration) string {
	return recordPrefix + "model_slo_error_ratio:rate" + dur(w)
}

// Error-budget records: the requests and the good requests of the budget's
// rate window, and the share of the budget left over the SLO window.
const (
	recModelRequests     = recordPrefix + "model_slo_requests:rate5m"
	recModelGoodRequests = recordPrefix + "model_slo_good_requests:rate5m"
	recReplicaRequests   = recordPrefix + "replica_slo_requests:rate5m"
	recReplicaGood       = recordPrefix + "replica_slo_good_requests:rate5m"
	budgetRateWindow     = 5 * time.Minute
)

func modelBudgetRecord(window time.Duration) string {
	return recordPrefix + "model_slo_error_budget_remaining:ratio" + dur(window)
}

func replicaBudgetRecord(window time.Duration) string {
	return recordPrefix + "replica_slo_error_budget_remaining:ratio" + dur(window)
}

func probeSuccessRecord(w time.Duration) string {
	return recordPrefix + "probe_success_ratio:rate" + dur(w)
}

const (
	recModelInflight     = recordPrefix + "model_inflight_requests:sum"
	recModelKnee         = recordPrefix + "model_knee_concurrency:sum"
	recModelHeadroom     = recordPrefix + "model_headroom_ratio:pooled"
	recModelMinHead      = recordPrefix + "model_headroom_ratio:min"
	recModelReplicas     = recordPrefix + "model_replicas:count"
	recModelNeeded       = recordPrefix + "model_replicas_needed:sum"
	recModelOutputTPS    = recordPrefix + "model_output_tokens_per_second:sum"
	recModelGoodput      = recordPrefix + "model_goodput_tokens_per_second:sum"
	recSustainedHeadroom = RecordSustainedHeadroom
)

// RecordSustainedHeadroom names the recording rule of a replica's headroom
// averaged over enough finished requests
// (HeadroomExhaustedOptions.SustainRequests).
const RecordSustainedHeadroom = recordPrefix + "replica_headroom_ratio:sustained"

// RecordQuickHeadroom names the recording rule of a replica's headroom
// averaged over fewer finished requests (HeadroomExhaustedOptions.QuickRequests).
const RecordQuickHeadroom = recordPrefix + "replica_headroom_ratio:quick"

// burnWindows are every window the burn-rate alerts read, shortest first.
func (o Options) burnWindows() []time.Duration {
	var ws []time.Duration
	for _, w := range slices.Concat(o.SLO.Page, o.SLO.Ticket) {
		ws = append(ws, w.Long, w.Short)
	}
	slices.Sort(ws)
	return slices.Compact(ws)
}

// goodRate and totalRate are the rates of good requests (per slo) and of
// all requests over w, summed over the label set by (a replica's or a
// model's). Rates are first deduplicated per replica with max, so a
// replica exported by two kneewatch instances (HA) counts once; sharded
// instances export disjoint replicas, so the sum counts each once.
func (g *generator) goodRate(by []string, w time.Duration) parser.Expr {
	good := pql.MaxBy(g.replicaBy("slo"), pql.Rate(g.kw(catalog.MetricReplicaGoodRequests), w))
	if !slices.Equal(by, g.replicaBy()) {
		good = pql.SumBy(append(slices.Clone(by), "slo"), good)
	}
	return good
}

func (g *generator) totalRate(by []string, w time.Duration) parser.Expr {
	total := pql.MaxBy(g.replicaBy(), pql.Rate(g.kw(catalog.MetricReplicaRequests), w))
	if !slices.Equal(by, g.replicaBy()) {
		total = pql.SumBy(by, total)
	}
	return total
}

// errorRatio is the share of requests that missed the SLO over window w,
// 1 − good ÷ total, per slo, over the label set by. Where no request
// finished in w there is no ratio (not NaN), so an idle spell neither fires
// a burn alert nor poisons an average over it.
func (g *generator) errorRatio(by []string, w time.Duration) parser.Expr {
	return pql.Sub(pql.Num(1), pql.Div(g.goodRate(by, w), pql.Gt(g.totalRate(by, w), pql.Num(0)), pql.Ignoring("slo"), pql.GroupLeft()))
}

// sloWindows are the windows error ratios are recorded over: every burn
// window, and the budget's rate window (which the fleet dashboard reads).
func (o Options) sloWindows() []time.Duration {
	ws := append(o.burnWindows(), budgetRateWindow)
	slices.Sort(ws)
	return slices.Compact(ws)
}

func (g *generator) sloGroup() Group {
	var rs []rulefmt.Rule
	for _, w := range g.o.sloWindows() {
		rs = append(rs, g.record(errorRatioRecord(w), g.errorRatio(g.replicaBy(), w)))
	}
	for _, w := range g.o.sloWindows() {
		rs = append(rs, g.record(modelErrorRatioRecord(w), g.errorRatio(g.modelBy(), w)))
	}
	return g.group("kneewatch-slo",
		"Share of requests missing each latency SLO (slo=ttft|tpot) per replica and per model (its\n"+
			"replicas in one namespace of one cluster), over every window the multi-window multi-burn-rate\n"+
			"alerts read: 1 - good/total from kneewatch's request counters; absent where no request finished.",
		rs)
}

// budgetGroup records the error budget left over the SLO window, per
// model and per replica and slo: 1 − (error ratio over the window) ÷
// (1 − objective); 1 is untouched, 0 spent, negative overspent. The
// window's error ratio is 1 − Σ good ÷ Σ total over 5m rates recorded at
// every evaluation, so it weighs each request once (busy hours count more
// than idle ones) without reading 30 days of raw counters.
func (g *generator) budgetGroup() Group {
	o := g.o.SLO
	budget := complement(o.Objective)
	sumOver := func(name string) parser.Expr {
		return pql.Call("sum_over_time", pql.Matrix(g.recorded(name), o.BudgetWindow))
	}
	remaining := func(good, total string) parser.Expr {
		ratio := pql.Sub(pql.Num(1), pql.Div(sumOver(good), pql.Gt(sumOver(total), pql.Num(0)), pql.Ignoring("slo"), pql.GroupLeft()))
		return pql.Sub(pql.Num(1), pql.Div(ratio, pql.Num(budget)))
	}
	rs := []rulefmt.Rule{
		g.record(recModelRequests, g.totalRate(g.modelBy(), budgetRateWindow)),
		g.record(recModelGoodRequests, g.goodRate(g.modelBy(), budgetRateWindow)),
		g.record(modelBudgetRecord(o.BudgetWindow), remaining(recModelGoodRequests, recModelRequests)),
		g.record(recReplicaRequests, g.totalRate(g.replicaBy(), budgetRateWindow)),
		g.record(recReplicaGood, g.goodRate(g.replicaBy(), budgetRateWindow)),
		g.record(replicaBudgetRecord(o.BudgetWindow), remaining(recReplicaGood, recReplicaRequests)),
	}
	return g.group("kneewatch-slo-budget",
		fmt.Sprintf("Error budget remaining over %s per model and per replica, per slo: 1 - error ratio / %s\n"+
			"(objective %s); 1 untouched, 0 spent, below 0 overspent. Request-weighted: the sums of the\n"+
			"5m request rates recorded here, at every evaluation, over the window.", dur(o.BudgetWindow), numText(budget), pct(o.Objective)),
		rs)
}

// headroomGroup records the sustained headroom the page reads, when the page
// is set to read it; nil otherwise.
func (g *generator) headroomGroup() *Group {
	o := g.o.HeadroomExhausted
	if o.SustainRequests <= 0 {
		return nil
	}
	how := "averaged over"
	if o.SustainByDimension {
		how = "1 - the largest knee load ratio, each averaged (where judged at every evaluation) over"
	}
	gr := g.group("kneewatch-headroom",
		fmt.Sprintf("Headroom to the knee, %s\nthe shortest window that holds at least %d finished requests (the page's level and trend\n"+
			"arms read it): at a few requests a second the one-window headroom swings with every long\n"+
			"request; a latency percentile is judged over that many requests too.%s%s", how, o.SustainRequests, floorText(o), quickText(o)),
		[]rulefmt.Rule{g.record(recSustainedHeadroom, g.sustainedHeadroom(o.SustainRequests, o.SustainWindows))})
	if o.quickArm() {
		gr.Rules = append(gr.Rules, g.record(RecordQuickHeadroom, g.sustainedHeadroom(o.QuickRequests, o.quickWindows())))
	}
	return &gr
}

// floorText describes the longest window's floor in the headroom group's
// comment.
func floorText(o HeadroomExhaustedOptions) string {
	floor := o.SustainFloorRequests
	if floor <= 0 {
		return ""
	}
	return fmt.Sprintf("\nWhere none does, the longest window, once it holds at least %d: a replica just watched is\n"+
		"not judged on its first few requests.", floor)
}

// quickText describes the quick average in the headroom group's comment.
func quickText(o HeadroomExhaustedOptions) string {
	if !o.quickArm() {
		return ""
	}
	ws := o.quickWindows()
	return fmt.Sprintf("\nThe quick average is the same over at least %d requests, in a window of %s to %s (the page's\n"+
		"quick arm): a step far past the knee needs fewer requests to tell from noise than one just past it.",
		o.QuickRequests, dur(cmp.Or(ws[0], o.SustainBaseWindow)), dur(ws[len(ws)-1]))
}

// sustainedHeadroom is the ladder behind recSustainedHeadroom: for each
// window but the last, the headroom averaged over it where the replica
// finished at least requests requests in it; else over the last, where it
// finished at least SustainFloorRequests.
// A zero window is the exported headroom, already a mean over
// SustainBaseWindow.
func (g *generator) sustainedHeadroom(requests int, ws []time.Duration) parser.Expr {
	o := g.o.HeadroomExhausted
	over := func(w time.Duration) parser.Expr {
		if w == 0 {
			return g.perReplica(catalog.MetricReplicaHeadroom)
		}
		if o.SustainByDimension {
			// Only dimensions judged at every evaluation in the window:
			// effective_load is judged only at high load, and its mean
			// over those evaluations alone would read the window's load
			// as its busiest part.
			ratios := g.kw(catalog.MetricReplicaKneeLoad)
			judgedThroughout := pql.Gte(pql.Call("count_over_time", pql.Matrix(ratios, w)),
				pql.Call("count_over_time", pql.Matrix(g.kw(catalog.MetricReplicaHeadroom), w)),
				pql.Ignoring("dimension"), pql.GroupLeft())
			return pql.Sub(pql.Num(1), pql.MaxBy(g.replicaBy(), pql.And(pql.AvgOverTime(ratios, w), judgedThroughout)))
		}
		return pql.MaxBy(g.replicaBy(), pql.AvgOverTime(g.kw(catalog.MetricReplicaHeadroom), w))
	}
	enough := func(w time.Duration, n int) parser.Expr {
		if w == 0 {
			w = o.SustainBaseWindow
		}
		finished := g.increaseBy(catalog.MetricReplicaRequests, w, g.replicaBy())
		return pql.Binary(parser.GTE, finished, pql.Num(float64(n)))
	}
	var arms []parser.Expr
	for _, w := range ws[:len(ws)-1] {
		arms = append(arms, pql.And(over(w), enough(w, requests), pql.On(g.replicaBy()...)))
	}
	last := over(ws[len(ws)-1])
	if floor := o.SustainFloorRequests; floor > 0 {
		last = pql.And(last, enough(ws[len(ws)-1], floor), pql.On(g.replicaBy()...))
	}
	return pql.AnyOf(append(arms, last)...)
}

// increaseBy is a kneewatch counter's increase over w, deduped to one
// series per by (two kneewatch instances in HA count the same requests).
func (g *generator) increaseBy(d catalog.MetricDesc, w time.Duration, by []string) parser.Expr {
	return pql.MaxBy(by, pql.Call("increase", pql.Matrix(g.kw(d), w)))
}

// perReplica dedups a kneewatch gauge to one series per replica, so fleet
// sums do not double count when two kneewatch instances (HA) export it.
func (g *generator) perReplica(d catalog.MetricDesc) parser.Expr {
	return pql.MaxBy(g.replicaBy(), g.kw(d))
}

func (g *generator) fleetGroup() Group {
	// Load and knee sums cover evaluated replicas only (those with a
	// headroom), as the Go fleet headroom sums over available replicas: a
	// replica without a profile still exports its in-flight load.
	evaluated := g.perReplica(catalog.MetricReplicaHeadroom)
	inflight := pql.And(g.perReplica(catalog.MetricReplicaInflight), evaluated, pql.On(g.replicaBy()...))
	knee := pql.And(g.perReplica(catalog.MetricKneeConcurrency), evaluated, pql.On(g.replicaBy()...))
	rs := []rulefmt.Rule{
		g.record(recModelInflight, pql.SumBy(g.modelBy(), inflight)),
		g.record(recModelKnee, pql.SumBy(g.modelBy(), knee)),
		g.record(recModelHeadroom, pql.Sub(pql.Num(1), pql.Div(pql.SumBy(g.modelBy(), inflight), pql.SumBy(g.modelBy(), knee)))),
		g.record(recModelMinHead, pql.MinBy(g.modelBy(), g.perReplica(catalog.MetricReplicaHeadroom))),
		g.record(recModelReplicas, pql.CountBy(g.modelBy(), g.perReplica(catalog.MetricReplicaHeadroom))),
		// As kneewatch_fleet_replicas_needed, but over every kneewatch
		// instance: a sharded instance only sees its own replicas.
		g.record(recModelNeeded, pql.Div(pql.SumBy(g.modelBy(), pql.Sub(pql.Num(1), g.perReplica(catalog.MetricReplicaHeadroom))),
			pql.Num(complement(g.o.Fleet.TargetHeadroom)))),
		g.record(recModelOutputTPS, pql.SumBy(g.modelBy(), g.perReplica(catalog.MetricReplicaOutputTPS))),
		g.record(recModelGoodput, pql.SumBy(g.modelBy(), g.perReplica(catalog.MetricReplicaGoodput))),
	}
	return g.group("kneewatch-fleet",
		"Per-model fleet aggregates of kneewatch's replica series, computed by Prometheus so they also\n"+
			"cover kneewatch instances sharded by target. Each replica counts once even when two kneewatch\n"+
			"instances (HA) export it. pooled headroom = 1 - sum(in-flight) / sum(knee concurrency) over\n"+
			"the replicas kneewatch could evaluate (those with a headroom).",
		rs)
}

// probeSuccessRatio is the share of a replica's probes that succeeded over
// w, only where some probe ran (no NaN while probes are skipped). A counter
// never incremented may not be exported at all, so successes fall back to 0
// where only failures exist (a replica whose probes never succeeded gets 0,
// not nothing); attempts are successes and failures of every class, which
// never share a label set, so "or" is their union.
func (g *generator) probeSuccessRatio(w time.Duration) parser.Expr {
	ok := pql.Rate(g.kw(catalog.MetricProbeSuccess), w)
	failed := pql.Rate(g.kw(catalog.MetricProbeFailures), w)
	attempts := pql.SumBy(g.probeBy(), pql.Or(ok, failed))
	return pql.And(
		pql.Div(pql.SumBy(g.probeBy(), pql.Or(ok, pql.Mul(pql.Num(0), failed))), attempts),
		pql.Gt(attempts, pql.Num(0)),
	)
}

func (g *generator) probeGroup() Group {
	// The page's window first, then the warning's: the order does not
	// move with their lengths, so the chart's template (kneewatch rules
	// --format helm) lays the group out the same for any all_failing_for.
	// One window when both are the same.
	ws := []time.Duration{g.o.Probes.FailingWindow}
	if g.o.Probes.SuccessWindow != g.o.Probes.FailingWindow {
		ws = append(ws, g.o.Probes.SuccessWindow)
	}
	var rs []rulefmt.Rule
	for _, w := range ws {
		rs = append(rs, g.record(probeSuccessRecord(w), g.probeSuccessRatio(w)))
	}
	return g.group("kneewatch-probes",
		"Share of synthetic probes that succeeded, per replica. No probe in the window (e.g. all\n"+
			"skipped because the replica is past its knee) gives no value, not 0.",
		rs)
}
