package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/kneewatch/kneewatch/catalog"
)

// The replica dashboard's panels, in reading order, under the kneewatch
// status row (IDs 22 to 24); the knee panel (ID 25, knee.go) is under the
// first row of figures.
var (
	replicaHeadroom    = card{1, 0, 3, 6, 4, "Headroom", "How much more load can this replica take before its knee?", unitRatio}
	replicaLimiting    = card{2, 6, 3, 6, 4, "Limiting resource", "Which resource limits this replica at its knee: compute or KV cache?", unitNone}
	replicaGoodputNow  = card{3, 12, 3, 6, 4, "Goodput", "How many output tokens per second that met the SLO does this replica serve now?", unitTokensPerSecond}
	replicaEvaluation  = card{4, 18, 3, 6, 4, "Evaluation status", "Could kneewatch compute this replica's headroom, and if not, why?", unitNone}
	replicaInflight    = card{5, 0, 18, 12, 9, "In-flight vs knee concurrency", "How does the in-flight load compare with the knee concurrency and the alert lines?", unitCount}
	replicaThroughput  = card{6, 12, 18, 12, 9, "Throughput vs knee throughput", "Are the replica's output and goodput near what they were at its knee?", unitTokensPerSecond}
	replicaOverTime    = card{7, 0, 27, 12, 8, "Headroom over time", "How has the headroom moved against the page and warning thresholds?", unitRatio}
	replicaKneeLoad    = card{8, 12, 27, 12, 8, "Knee load by dimension", "Which dimension (concurrency, throughput, KV cache) is closest to the knee?", unitRatio}
	replicaTTFT        = card{9, 0, 35, 12, 8, "TTFT against the SLO", "Is time to first token (p50 and the SLO quantile) within its SLO threshold?", unitSeconds}
	replicaTPOT        = card{10, 12, 35, 12, 8, "TPOT against the SLO", "Is time per output token (p50 and the SLO quantile) within its SLO threshold?", unitSeconds}
	replicaKV          = card{11, 0, 43, 12, 8, "KV-cache usage vs the knee's", "Is the KV cache fuller than it was at the knee?", unitRatio}
	replicaQueue       = card{12, 12, 43, 12, 8, "Running and waiting requests", "Is the batch full and is a queue building up?", unitCount}
	replicaPreemptions = card{13, 0, 51, 8, 8, "Preemptions", "Is the engine evicting running requests for lack of KV cache?", unitPerSecond}
	replicaPrefill     = card{14, 8, 51, 8, 8, "Prefill share of tokens", "Is a prefill wave (long prompts) eating the step budget?", unitRatio}
	replicaMixDrift    = card{15, 16, 51, 8, 8, "Mix drift from the profile", "Has the request mix moved away from the one the knee was measured with?", unitRatio}
	replicaGPUUtil     = card{16, 0, 59, 8, 8, "GPU utilization", "Is the GPU busy (DCGM utilization, as kneewatch reads it for this replica)?", unitRatio}
	replicaTensor      = card{17, 8, 59, 8, 8, "Tensor core activity", "Are the selected GPUs' tensor cores saturated (compute-bound prefill)?", unitRatio}
	replicaDRAM        = card{18, 16, 59, 8, 8, "DRAM bandwidth activity", "Is the selected GPUs' memory bandwidth saturated (memory-bound decode), or is one GPU slow?", unitRatio}
	replicaProbeTTFT   = card{19, 0, 67, 12, 8, "Probe vs server TTFT", "Does a client see the same time to first token as the server reports?", unitSeconds}
	replicaProbeTPOT   = card{20, 12, 67, 12, 8, "Probe vs server TPOT", "Does a client see the same time per output token as the server reports?", unitSeconds}
	replicaAlerts      = card{21, 0, 75, 24, 6, "Alerts firing for this replica", "Which kneewatch alerts are firing for this replica now?", unitNone}
)

// Replica builds the per-replica dashboard: where one replica stands on its
// own latency-throughput curve, and why.
func Replica(opts Options) (dashboard.Dashboard, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return dashboard.Dashboard{}, err
	}
	k := newKit(o)
	m := func(d catalog.MetricDesc, extra ...string) string {
		return sel(d, served(append([]string{byReplica}, extra...)...)...)
	}

	b := dashboard.NewDashboardBuilder(o.TitlePrefix+" / Replica").
		Uid(ReplicaUID).
		Description("One LLM-serving replica against its measured knee: load, latency against the SLO, KV cache, GPU, probes.").
		Tags(tags).
		Editable().
		Refresh("30s").
		Time("now-3h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Link(linkTo("Fleet capacity", FleetUID, "Every replica's headroom and the fleet's capacity"))
	b = k.upstreamLinks(k.variables(b).
		WithVariable(k.modelVariable()).
		WithVariable(k.replicaVariable()).
		WithVariable(k.podVariable()).
		WithVariable(k.gpuVariable()))

	k.statusRow(b, 22)

	// The replica's own figures are empty when kneewatch is down, and also
	// while it runs when the replica is not evaluated (the evaluation
	// status says why): "no data", not a number.
	b.WithPanel(k.stat(replicaHeadroom, noData,
		query{expr: m(catalog.MetricReplicaHeadroom), legend: "headroom"}).
		Thresholds(k.headroomThresholds()))
	b.WithPanel(k.stat(replicaLimiting, noData,
		query{expr: m(catalog.MetricReplicaLimiting) + " == 1", legend: "{{resource}}"}).
		TextMode(common.BigValueTextModeName).
		ColorMode(common.BigValueColorModeNone))
	b.WithPanel(k.stat(replicaGoodputNow, noData,
		query{expr: m(catalog.MetricReplicaGoodput), legend: "goodput"}).
		ColorMode(common.BigValueColorModeNone))
	// One of the two queries returns a series: the reason, in red, when the
	// evaluation failed; "ok", in green, when it did not. Neither does when
	// no kneewatch watching the replica is scraped.
	b.WithPanel(k.stat(replicaEvaluation, kneewatchDown,
		query{expr: "max by (reason) (" + m(catalog.MetricReplicaEvalOK) + " == 0)", legend: "not ok: {{reason}}"},
		query{expr: "max(" + m(catalog.MetricReplicaEvalOK) + " == 1)", legend: "ok"}).
		TextMode(common.BigValueTextModeName).
		Thresholds(thresholds("red", threshold{1, "green"})))

	b.WithPanel(k.kneePanel(replicaKnee, kneeQueries(m)))

	knee := m(catalog.MetricKneeConcurrency)
	b.WithPanel(k.timeseries(replicaInflight,
		query{m(catalog.MetricReplicaInflight), "in flight"},
		query{knee, "knee"},
		query{knee + " * (1 - " + num(o.WarningHeadroom) + ")", "warning (" + percent(o.WarningHeadroom) + " headroom)"},
		query{knee + " * (1 - " + num(o.PageHeadroom) + ")", "page (" + percent(o.PageHeadroom) + " headroom)"}).
		Min(0).
		OverrideByQuery("B", reference("red")).
		OverrideByQuery("C", reference("orange")).
		OverrideByQuery("D", reference("dark-red")))

	b.WithPanel(k.timeseries(replicaThroughput,
		query{m(catalog.MetricReplicaOutputTPS), "output"},
		query{m(catalog.MetricReplicaGoodput), "goodput"},
		query{m(catalog.MetricKneeOutputTPS), "knee output"},
		query{m(catalog.MetricKneeGoodput), "knee goodput"}).
		Min(0).
		OverrideByQuery("C", reference("red")).
		OverrideByQuery("D", reference("orange")))

	b.WithPanel(k.timeseries(replicaOverTime,
		query{m(catalog.MetricReplicaHeadroom), "headroom"}).
		Max(1).
		Thresholds(k.headroomThresholds()).
		ThresholdsStyle(thresholdLines()))

	b.WithPanel(k.timeseries(replicaKneeLoad,
		query{m(catalog.MetricReplicaKneeLoad), "{{dimension}}"}).
		Min(0).
		Thresholds(thresholds("green",
			threshold{1 - o.WarningHeadroom, "orange"},
			threshold{1 - o.PageHeadroom, "red"})).
		ThresholdsStyle(thresholdLines()))

	b.WithPanel(k.latencyPanel(replicaTTFT, catalog.MetricReplicaTTFT, catalog.MetricSLOTTFT))
	b.WithPanel(k.latencyPanel(replicaTPOT, catalog.MetricReplicaTPOT, catalog.MetricSLOTPOT))

	b.WithPanel(k.timeseries(replicaKV,
		query{m(catalog.MetricReplicaKV), "KV usage"},
		query{m(catalog.MetricKneeKV), "knee KV usage"}).
		Min(0).Max(1).
		OverrideByQuery("B", reference("red")))

	b.WithPanel(k.timeseries(replicaQueue,
		query{m(catalog.MetricReplicaRunning), "running"},
		query{m(catalog.MetricReplicaWaiting), "waiting"}).
		Min(0))

	b.WithPanel(k.timeseries(replicaPreemptions,
		query{m(catalog.MetricReplicaPreemptions), "preemptions"}).
		Min(0))

	prompt := m(catalog.MetricReplicaPromptTPS)
	b.WithPanel(k.timeseries(replicaPrefill,
		query{prompt + " / (" + prompt + " + " + m(catalog.MetricReplicaOutputTPS) + ")", "prompt share"}).
		Min(0).Max(1))

	b.WithPanel(k.timeseries(replicaMixDrift,
		query{m(catalog.MetricReplicaMixDrift), "drift"}).
		Min(0))

	b.WithPanel(k.timeseries(replicaGPUUtil,
		query{m(catalog.MetricReplicaGPUUtil), "utilization"}).
		Min(0).Max(1))

	// dcgm-exporter renamed Hostname to hostname (2026); one of the two is empty.
	gpuLegend := "{{Hostname}}{{hostname}} GPU {{gpu}}"
	b.WithPanel(k.timeseries(replicaTensor,
		query{selName(dcgmTensorActive, byGPU), gpuLegend}).
		Min(0).Max(1))
	b.WithPanel(k.timeseries(replicaDRAM,
		query{selName(dcgmDRAMActive, byGPU), gpuLegend}).
		Min(0).Max(1))

	b.WithPanel(k.probePanel(replicaProbeTTFT, catalog.MetricReplicaTTFT, catalog.MetricProbeTTFT, catalog.MetricSLOTTFT))
	b.WithPanel(k.probePanel(replicaProbeTPOT, catalog.MetricReplicaTPOT, catalog.MetricProbeTPOT, catalog.MetricSLOTPOT))

	b.WithPanel(k.table(replicaAlerts,
		query{expr: "max by (alertname, severity) (" +
			selName(alertsMetric, byClusterOrNone, `alertname=~"`+alertPrefix+`.*"`, `alertstate="firing"`, byReplica) + ")"}).
		WithTransformation(columns("", "alertname", "severity")))

	return b.Build()
}

// latencyPanel draws a server-side latency at p50 and at the SLO quantile,
// with the replica's SLO threshold as a red dashed line.
func (k kit) latencyPanel(c card, live, slo catalog.MetricDesc) cog.Builder[dashboard.Panel] {
	return k.timeseries(c,
		query{sel(live, served(byReplica, eq("quantile", "0.5"))...), "p50"},
		query{sel(live, served(byReplica, eq("quantile", k.o.SLOQuantile))...), "quantile " + k.o.SLOQuantile},
		query{sel(slo, served(byReplica)...), "SLO (quantile {{slo_quantile}})"}).
		Min(0).
		OverrideByQuery("C", reference("red"))
}

// probePanel puts the probes' client-side latency at the SLO quantile beside
// the server's own, with the SLO threshold.
func (k kit) probePanel(c card, server, probe, slo catalog.MetricDesc) cog.Builder[dashboard.Panel] {
	return k.timeseries(c,
		query{sel(server, served(byReplica, eq("quantile", k.o.SLOQuantile))...), "server, quantile " + k.o.SLOQuantile},
		query{"histogram_quantile(" + k.o.SLOQuantile + ", sum by (le) (rate(" +
			selName(probe.Name+"_bucket", served(byReplica)...) + "[" + probeWindow + "])))", "probe, quantile " + k.o.SLOQuantile},
		query{sel(slo, served(byReplica)...), "SLO (quantile {{slo_quantile}})"}).
		Min(0).
		OverrideByQuery("C", reference("red"))
}
