package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kneewatch/kneewatch/catalog"
)

// Ruler recording rule names; the window is part of the name.
func (o Options) rulerInflightRecord() string {
	return recordPrefix + "replica_inflight_requests:avg" + dur(o.Ruler.Window)
}

func (o Options) rulerHeadroomRecord() string {
	return recordPrefix + "replica_headroom_ratio:avg" + dur(o.Ruler.Window)
}

// rulerInflight is each replica's mean in-flight requests (running +
// waiting) over the window, from the raw engine series: the same mean the Go
// inference takes. Data-parallel engines export one series per engine
// label; they are summed per replica.
func (g *generator) rulerInflight() parser.Expr {
	r := g.o.Ruler
	running := selector(r.RunningMetric, g.ruler...)
	waiting := selector(r.WaitingMetric, g.ruler...)
	var inflight parser.Expr = add(avgOverTime(running, r.Window), avgOverTime(waiting, r.Window))
	if r.JoinLabel != "replica" {
		inflight = copyLabel(inflight, "replica", r.JoinLabel)
	}
	return sumBy(g.by("replica"), inflight)
}

// rulerHeadroom is 1 − in-flight ÷ knee concurrency per replica. The knee
// side keeps replica, model and profile (group_right), deduplicated over
// kneewatch instances.
func (g *generator) rulerHeadroom() parser.Expr {
	knee := maxBy(g.replicaBy(), g.kw(catalog.MetricKneeConcurrency))
	return sub(num(1), div(g.rulerInflight(), knee, on(g.by("replica")...), groupRight()))
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
	comment := fmt.Sprintf("Ruler group: replica headroom recomputed in PromQL from the raw engine series, so a\n"+
		"Prometheus, Thanos or Mimir ruler can evaluate it at any scale. It is the load\n"+
		"(concurrency) dimension of kneewatch's headroom:\n"+
		"  1 - avg_over_time(%s + %s [%s]) / kneewatch_knee_concurrency\n"+
		"Join convention: %s.\n"+
		"The two sides join on (%s). Keep the window equal to kneewatch's evaluation window.",
		r.RunningMetric, r.WaitingMetric, dur(r.Window), join, strings.Join(on, ", "))
	rs := []rulefmt.Rule{
		g.record(g.o.rulerInflightRecord(), g.rulerInflight()),
		g.record(g.o.rulerHeadroomRecord(), g.rulerHeadroom()),
	}
	return g.group("kneewatch-ruler", comment, rs)
}
