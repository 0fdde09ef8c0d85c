package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/pql"
)

// Ruler recording rule names; the window is part of the name.
func (o Options) rulerInflightRecord() string {
	return recordPrefix + "replica_inflight_requests:avg" + dur(o.Ruler.Window)
}

func (o Options) rulerKVRecord() string {
	return recordPrefix + "replica_kv_cache_usage_ratio:avg" + dur(o.Ruler.Window)
}

func (o Options) rulerKneeRatioRecord() string {
	return recordPrefix + "replica_knee_ratio:avg" + dur(o.Ruler.Window)
}

func (o Options) rulerHeadroomRecord() string {
	return recordPrefix + "replica_headroom_ratio:avg" + dur(o.Ruler.Window)
}

// rulerDimensions are the headroom dimensions the ruler group recomputes,
// by the dimension label kneewatch exports them under
// (kneewatch_replica_knee_load_ratio{dimension=…}).
func (o Options) rulerDimensions() []string {
	if o.Ruler.KVUsageMetric == "" {
		return []string{"load"}
	}
	return []string{"load", "kv_cache"}
}

// rulerSeries is a raw engine gauge's mean over the window, per series,
// with the join label copied into replica.
func (g *generator) rulerMean(metric string) parser.Expr {
	var e parser.Expr = pql.AvgOverTime(pql.Selector(metric, g.ruler...), g.o.Ruler.Window)
	if g.o.Ruler.JoinLabel != "replica" {
		e = pql.CopyLabel(e, "replica", g.o.Ruler.JoinLabel)
	}
	return e
}

// rulerInflight is each replica's mean in-flight requests (running +
// waiting) over the window, from the raw engine series: the same mean the Go
// inference takes. Data-parallel engines export one series per engine
// label; they are summed per replica.
func (g *generator) rulerInflight() parser.Expr {
	r := g.o.Ruler
	running := pql.Selector(r.RunningMetric, g.ruler...)
	waiting := pql.Selector(r.WaitingMetric, g.ruler...)
	var inflight parser.Expr = pql.Add(pql.AvgOverTime(running, r.Window), pql.AvgOverTime(waiting, r.Window))
	if r.JoinLabel != "replica" {
		inflight = pql.CopyLabel(inflight, "replica", r.JoinLabel)
	}
	return pql.SumBy(g.by("replica"), inflight)
}

// rulerKV is each replica's mean KV-cache usage over the window. The vLLM
// adapter averages data-parallel engines' usage at each scrape and the
// window averages the scrapes; the mean over engines of each engine's
// mean over the window is the same number, as every engine of a replica
// is sampled at the same scrapes.
func (g *generator) rulerKV() parser.Expr {
	return pql.Aggregate(parser.AVG, g.by("replica"), g.rulerMean(g.o.Ruler.KVUsageMetric))
}

// rulerRatio is a raw mean ÷ one of kneewatch's per-replica knee series,
// matched on replica; the result keeps the knee side's labels
// (group_right), deduplicated over kneewatch instances.
func (g *generator) rulerRatio(mean parser.Expr, knee catalog.MetricDesc) parser.Expr {
	return pql.Div(mean, pql.MaxBy(g.replicaBy(), g.kw(knee)), pql.On(g.by("replica")...), pql.GroupRight())
}

// rulerKneeRatios is every covered dimension's knee ratio, each series
// labeled with its dimension: in-flight ÷ knee concurrency (the knee
// kneewatch compared with, moved with the mix when the profile has a mix
// model), and KV usage ÷ the KV reference kneewatch exports.
func (g *generator) rulerKneeRatios() parser.Expr {
	var e parser.Expr = pql.WithLabel(g.rulerRatio(g.rulerInflight(), catalog.MetricKneeConcurrency), "dimension", "load")
	if g.o.Ruler.KVUsageMetric != "" {
		kv := pql.WithLabel(g.rulerRatio(g.rulerKV(), catalog.MetricKneeKVReference), "dimension", "kv_cache")
		e = pql.Binary(parser.LOR, e, kv)
	}
	return e
}

// rulerHeadroom is 1 − the largest covered ratio per replica, as
// knee.Evaluate takes 1 − the largest known ratio.
func (g *generator) rulerHeadroom() parser.Expr {
	return pql.Sub(pql.Num(1), pql.MaxBy(g.replicaBy(), g.rulerKneeRatios()))
}

func (g *generator) rulerGroup() Group {
	r := g.o.Ruler
	join := "the engine scrape job adds a replica label (relabel_configs,\n" +
		"target_label: replica) whose value is the replica's name in kneewatch's config"
	if r.JoinLabel != "replica" {
		join = fmt.Sprintf("the raw series' %s label holds the replica's name in\n"+
			"kneewatch's config; label_replace copies it into replica", r.JoinLabel)
	}
	on := slices.Concat([]string{"replica"}, g.o.GroupBy)
	dims := "  load:     avg_over_time(" + r.RunningMetric + " + " + r.WaitingMetric + " [" + dur(r.Window) + "]) / kneewatch_knee_concurrency\n"
	if r.KVUsageMetric != "" {
		dims += "  kv_cache: avg_over_time(" + r.KVUsageMetric + " [" + dur(r.Window) + "]) / kneewatch_knee_kv_cache_reference_ratio\n"
	}
	comment := fmt.Sprintf("Ruler group: replica headroom recomputed in PromQL from the raw engine series, so a\n"+
		"Prometheus, Thanos or Mimir ruler can evaluate it at any scale. It covers these dimensions\n"+
		"of kneewatch's headroom (each equal to kneewatch's own ratio), and is 1 - the largest:\n"+
		"%s"+
		"kneewatch's throughput and effective_load dimensions read the profile's measured curve\n"+
		"(interpolated and inverted, gated by its slope) and the observed request mix, which PromQL\n"+
		"cannot: where one of them is the tightest, this headroom is above kneewatch's\n"+
		"(docs/runbooks/README.md, the ruler group).\n"+
		"Join convention: %s.\n"+
		"The two sides join on (%s). Keep the window equal to kneewatch's evaluation window.",
		dims, join, strings.Join(on, ", "))
	rs := []rulefmt.Rule{g.record(g.o.rulerInflightRecord(), g.rulerInflight())}
	if r.KVUsageMetric != "" {
		rs = append(rs, g.record(g.o.rulerKVRecord(), g.rulerKV()))
	}
	rs = append(rs,
		g.record(g.o.rulerKneeRatioRecord(), g.rulerKneeRatios()),
		g.record(g.o.rulerHeadroomRecord(), g.rulerHeadroom()),
	)
	return g.group("kneewatch-ruler", comment, rs)
}
