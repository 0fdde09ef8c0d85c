package rules

import (
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kneewatch/kneewatch/catalog"
)

// Recording rule names. Windows are part of the name, Prometheus-style.
func errorRatioRecord(w time.Duration) string {
	return recordPrefix + "replica_slo_error_ratio:rate" + dur(w)
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
	recModelOutputTPS    = recordPrefix + "model_output_tokens_per_second:sum"
	recModelGoodput      = recordPrefix + "model_goodput_tokens_per_second:sum"
	recModelErrorRatio   = recordPrefix + "model_slo_error_ratio:rate5m"
	recSustainedHeadroom = RecordSustainedHeadroom
)

// RecordSustainedHeadroom names the recording rule of a replica's headroom
// averaged over enough finished requests
// (HeadroomExhaustedOptions.SustainRequests).
const RecordSustainedHeadroom = recordPrefix + "replica_headroom_ratio:sustained"

// burnWindows are every window the burn-rate alerts read, shortest first.
func (o Options) burnWindows() []time.Duration {
	var ws []time.Duration
	for _, w := range slices.Concat(o.SLO.Page, o.SLO.Ticket) {
		ws = append(ws, w.Long, w.Short)
	}
	slices.Sort(ws)
	return slices.Compact(ws)
}

// errorRatio is the share of requests that missed the SLO over window w,
// 1 − good ÷ total, per slo, summed over the label set by (a replica's or a
// model's). Rates are first deduplicated per replica with max, so a replica
// exported by two kneewatch instances (HA) counts once.
func (g *generator) errorRatio(by []string, w time.Duration) parser.Expr {
	good := maxBy(g.replicaBy("slo"), rate(g.kw(catalog.MetricReplicaGoodRequests), w))
	total := maxBy(g.replicaBy(), rate(g.kw(catalog.MetricReplicaRequests), w))
	if !slices.Equal(by, g.replicaBy()) {
		good = sumBy(append(slices.Clone(by), "slo"), good)
		total = sumBy(by, total)
	}
	return sub(num(1), div(good, total, ignoring("slo"), groupLeft()))
}

func (g *generator) sloGroup() Group {
	var rs []rulefmt.Rule
	for _, w := range g.o.burnWindows() {
		rs = append(rs, g.record(errorRatioRecord(w), g.errorRatio(g.replicaBy(), w)))
	}
	return g.group("kneewatch-slo",
		"Share of requests missing each latency SLO (slo=ttft|tpot) per replica, over every window the\n"+
			"multi-window multi-burn-rate alerts read: 1 - good/total from kneewatch's request counters.",
		rs)
}

// headroomGroup records the sustained headroom the page reads, when the page
// is set to read it; nil otherwise.
func (g *generator) headroomGroup() *Group {
	o := g.o.HeadroomExhausted
	if o.SustainRequests <= 0 {
		return nil
	}
	gr := g.group("kneewatch-headroom",
		fmt.Sprintf("Headroom to the knee averaged over the shortest window that holds at least %d finished requests\n"+
			"(the page's level and trend arms read it): at a few requests a second the one-window headroom\n"+
			"swings with every long request; a latency percentile is judged over that many requests too.", o.SustainRequests),
		[]rulefmt.Rule{g.record(recSustainedHeadroom, g.sustainedHeadroom())})
	return &gr
}

// sustainedHeadroom is the ladder behind recSustainedHeadroom: for each
// window but the last, the headroom averaged over it where the replica
// finished at least SustainRequests requests in it; else over the last.
// A zero window is the exported headroom, already a mean over
// SustainBaseWindow.
func (g *generator) sustainedHeadroom() parser.Expr {
	o := g.o.HeadroomExhausted
	over := func(w time.Duration) parser.Expr {
		if w == 0 {
			return g.perReplica(catalog.MetricReplicaHeadroom)
		}
		return maxBy(g.replicaBy(), avgOverTime(g.kw(catalog.MetricReplicaHeadroom), w))
	}
	enough := func(w time.Duration) parser.Expr {
		if w == 0 {
			w = o.SustainBaseWindow
		}
		finished := maxBy(g.replicaBy(), call("increase", matrix(g.kw(catalog.MetricReplicaRequests), w)))
		return binary(parser.GTE, finished, num(float64(o.SustainRequests)))
	}
	ws := o.SustainWindows
	var arms []parser.Expr
	for _, w := range ws[:len(ws)-1] {
		arms = append(arms, and(over(w), enough(w), on(g.replicaBy()...)))
	}
	return anyOf(append(arms, over(ws[len(ws)-1]))...)
}

// perReplica dedups a kneewatch gauge to one series per replica, so fleet
// sums do not double count when two kneewatch instances (HA) export it.
func (g *generator) perReplica(d catalog.MetricDesc) parser.Expr {
	return maxBy(g.replicaBy(), g.kw(d))
}

func (g *generator) fleetGroup() Group {
	// Load and knee sums cover evaluated replicas only (those with a
	// headroom), as the Go fleet headroom sums over available replicas: a
	// replica without a profile still exports its in-flight load.
	evaluated := g.perReplica(catalog.MetricReplicaHeadroom)
	inflight := and(g.perReplica(catalog.MetricReplicaInflight), evaluated, on(g.replicaBy()...))
	knee := and(g.perReplica(catalog.MetricKneeConcurrency), evaluated, on(g.replicaBy()...))
	rs := []rulefmt.Rule{
		g.record(recModelInflight, sumBy(g.modelBy(), inflight)),
		g.record(recModelKnee, sumBy(g.modelBy(), knee)),
		g.record(recModelHeadroom, sub(num(1), div(sumBy(g.modelBy(), inflight), sumBy(g.modelBy(), knee)))),
		g.record(recModelMinHead, minBy(g.modelBy(), g.perReplica(catalog.MetricReplicaHeadroom))),
		g.record(recModelReplicas, countBy(g.modelBy(), g.perReplica(catalog.MetricReplicaHeadroom))),
		g.record(recModelOutputTPS, sumBy(g.modelBy(), g.perReplica(catalog.MetricReplicaOutputTPS))),
		g.record(recModelGoodput, sumBy(g.modelBy(), g.perReplica(catalog.MetricReplicaGoodput))),
		g.record(recModelErrorRatio, g.errorRatio(g.modelBy(), 5*time.Minute)),
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
	ok := rate(g.kw(catalog.MetricProbeSuccess), w)
	failed := rate(g.kw(catalog.MetricProbeFailures), w)
	attempts := sumBy(g.probeBy(), or(ok, failed))
	return and(
		div(sumBy(g.probeBy(), or(ok, mul(num(0), failed))), attempts),
		gt(attempts, num(0)),
	)
}

func (g *generator) probeGroup() Group {
	ws := []time.Duration{g.o.Probes.FailingWindow, g.o.Probes.SuccessWindow}
	slices.Sort(ws)
	var rs []rulefmt.Rule
	for _, w := range slices.Compact(ws) {
		rs = append(rs, g.record(probeSuccessRecord(w), g.probeSuccessRatio(w)))
	}
	return g.group("kneewatch-probes",
		"Share of synthetic probes that succeeded, per replica. No probe in the window (e.g. all\n"+
			"skipped because the replica is past its knee) gives no value, not 0.",
		rs)
}
