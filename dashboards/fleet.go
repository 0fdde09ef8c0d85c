package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/table"

	"github.com/kneewatch/kneewatch/catalog"
)

// The fleet dashboard's panels, in reading order, under the kneewatch
// status row (IDs 15 to 17). IDs and places are fixed so links and
// bookmarks to a panel keep working across versions.
var (
	fleetLowestHeadroom = card{1, 0, 3, 6, 4, "Lowest replica headroom", "How close to its knee is the replica nearest to it?", unitRatio}
	fleetPastPage       = card{2, 6, 3, 6, 4, "Replicas past the page threshold", "How many replicas have less headroom than the page threshold, or are past their knee?", unitCount}
	fleetBelowWarning   = card{3, 12, 3, 6, 4, "Replicas below the warning threshold", "How many replicas have less headroom than the warning threshold?", unitCount}
	fleetMissing        = card{4, 18, 3, 6, 4, "Replicas missing", "How many replicas does the fleet lack, summed over models, to serve today's goodput with the target headroom?", unitCount}
	fleetHeadroomTable  = card{5, 0, 7, 12, 10, "Headroom per replica", "Which replicas are nearest their knee, tightest first? Click one for its Replica dashboard.", unitRatio}
	fleetNeeded         = card{6, 12, 7, 12, 10, "Replicas needed vs available", "Does each model have enough replicas for its offered goodput?", unitCount}
	fleetGoodput        = card{7, 0, 17, 12, 8, "Goodput vs throughput", "How many output tokens per second does each model serve, and how many of them met the SLO?", unitTokensPerSecond}
	fleetModelHeadroom  = card{8, 12, 17, 12, 8, "Fleet headroom per model", "How much load can each model's fleet still absorb before it is at the knee as a whole?", unitRatio}
	fleetAttainment     = card{9, 0, 25, 12, 8, "SLO attainment", "What share of each model's requests met each latency SLO?", unitRatio}
	fleetBurn           = card{10, 12, 25, 12, 8, "Error budget burn rate", "How fast is each model spending its error budget, against the page burn rates?", unitTimes}
	fleetAlerts         = card{11, 0, 33, 12, 8, "Firing kneewatch alerts", "Which kneewatch alerts are firing now, and for which replica or model?", unitNone}
	fleetProbes         = card{12, 12, 33, 12, 8, "Probe success", "Do synthetic requests to each replica still stream tokens?", unitRatio}
	fleetNotEvaluated   = card{13, 0, 41, 12, 8, "Replicas not evaluated", "Which replicas have no headroom figure, and why?", unitNone}
	fleetTargetsDown    = card{14, 12, 41, 12, 8, "Targets down", "Which engine or DCGM endpoints did the last scrape fail to read?", unitNone}
)

// Fleet builds the fleet capacity dashboard, the on-call's landing page.
func Fleet(opts Options) (dashboard.Dashboard, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return dashboard.Dashboard{}, err
	}
	k := newKit(o)
	headroom := sel(catalog.MetricReplicaHeadroom, served(byModel)...)
	fleet := func(d catalog.MetricDesc) string { return sel(d, own(byModel)...) }
	replicas := func(d catalog.MetricDesc) string { return sel(d, served(byModel)...) }

	b := dashboard.NewDashboardBuilder(o.TitlePrefix+" / Fleet capacity").
		Uid(FleetUID).
		Description("How close every LLM-serving replica is to its knee, and how much capacity each model lacks.").
		Tags(tags).
		Editable().
		Refresh("30s").
		Time("now-3h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Link(linkTo("Replica", ReplicaUID, "One replica's operating point against its knee"))
	b = k.upstreamLinks(k.variables(b).WithVariable(k.modelVariable()))

	k.statusRow(b, 15)

	// The lowest headroom is empty when no replica could be evaluated,
	// which can happen while kneewatch runs: "no data", in grey. The counts
	// are 0 while kneewatch runs and empty only when it is down.
	b.WithPanel(k.stat(fleetLowestHeadroom, noData,
		query{expr: "min(" + headroom + ")", legend: "lowest"}).
		Thresholds(k.headroomThresholds()))
	b.WithPanel(k.stat(fleetPastPage, kneewatchDown,
		query{expr: zeroWhileUp("count(" + headroom + " < " + num(o.PageHeadroom) + ")"), legend: "replicas"}).
		Thresholds(thresholds("green", threshold{1, "red"})))
	b.WithPanel(k.stat(fleetBelowWarning, kneewatchDown,
		query{expr: zeroWhileUp("count(" + headroom + " < " + num(o.WarningHeadroom) + ")"), legend: "replicas"}).
		Thresholds(thresholds("green", threshold{1, "orange"})))
	b.WithPanel(k.stat(fleetMissing, kneewatchDown,
		query{expr: zeroWhileUp("sum(clamp_min(ceil(" + fleet(catalog.MetricFleetNeeded) + ") - " +
			fleet(catalog.MetricFleetReplicas) + ", 0))"), legend: "replicas"}).
		Thresholds(thresholds("green", threshold{1, "red"})))

	b.WithPanel(k.headroomTable())

	b.WithPanel(k.timeseries(fleetNeeded,
		query{fleet(catalog.MetricFleetNeeded), "{{model}} needed"},
		query{fleet(catalog.MetricFleetReplicas), "{{model}} available"}).
		Min(0).
		OverrideByQuery("A", reference("red")))

	b.WithPanel(k.timeseries(fleetGoodput,
		query{"sum by (model) (" + replicas(catalog.MetricReplicaOutputTPS) + ")", "{{model}} output"},
		query{"sum by (model) (" + replicas(catalog.MetricReplicaGoodput) + ")", "{{model}} goodput"}).
		Min(0))

	b.WithPanel(k.timeseries(fleetModelHeadroom,
		query{fleet(catalog.MetricFleetHeadroom), "{{model}}"}).
		Max(1).
		Thresholds(k.headroomThresholds()).
		ThresholdsStyle(thresholdLines()))

	b.WithPanel(k.timeseries(fleetAttainment,
		query{attainment(served(byModel), "$__rate_interval"), "{{model}} {{slo}}"}).
		Max(1).
		Thresholds(thresholds("red", threshold{o.Objective, "green"})).
		ThresholdsStyle(thresholdLines()))

	b.WithPanel(k.timeseries(fleetBurn,
		query{burnRate(o, served(byModel), burnFastWindow), "{{model}} {{slo}} over " + burnFastWindow},
		query{burnRate(o, served(byModel), burnSlowWindow), "{{model}} {{slo}} over " + burnSlowWindow}).
		Min(0).
		Thresholds(thresholds("green", threshold{burnSlowFactor, "orange"}, threshold{burnFastFactor, "red"})).
		ThresholdsStyle(thresholdLines()))

	b.WithPanel(k.table(fleetAlerts,
		query{expr: "max by (alertname, severity, model, replica) (" +
			selName(alertsMetric, byClusterOrNone, `alertname=~"`+alertPrefix+`.*"`, `alertstate="firing"`) + ")"}).
		WithTransformation(columns("", "alertname", "severity", "model", "replica")).
		SortBy([]cog.Builder[common.TableSortByFieldState]{
			common.NewTableSortByFieldStateBuilder().DisplayName("severity"),
		}))

	b.WithPanel(k.timeseries(fleetProbes,
		query{probeSuccess(served(byModel)), "{{replica}}"}).
		Min(0).Max(1).
		Thresholds(thresholds("red", threshold{0.9, "green"})).
		ThresholdsStyle(thresholdLines()))

	b.WithPanel(k.table(fleetNotEvaluated,
		query{expr: "max by (replica, model, reason) (" + replicas(catalog.MetricReplicaEvalOK) + ") == 0"}).
		WithTransformation(columns("", "replica", "model", "reason")))

	b.WithPanel(k.table(fleetTargetsDown,
		query{expr: "max by (replica, source) (" + sel(catalog.MetricTargetUp, served()...) + ") == 0"}).
		WithTransformation(columns("", "replica", "source")))

	return b.Build()
}

// headroomTable lists replicas tightest first, each cell a gauge coloured by
// the alert thresholds and linked to the replica's own dashboard.
func (k kit) headroomTable() *table.PanelBuilder {
	gauge := common.BarGaugeDisplayModeBasic
	return k.table(fleetHeadroomTable,
		query{expr: "sort(min by (replica, model) (" + sel(catalog.MetricReplicaHeadroom, served(byModel)...) + "))"}).
		WithTransformation(columns("Headroom", "replica", "model")).
		SortBy([]cog.Builder[common.TableSortByFieldState]{
			common.NewTableSortByFieldStateBuilder().DisplayName("Headroom"),
		}).
		Thresholds(k.headroomThresholds()).
		OverrideByName("Headroom", []dashboard.DynamicConfigValue{
			{Id: "custom.cellOptions", Value: common.TableBarGaugeCellOptions{Type: common.TableCellDisplayModeGauge, Mode: &gauge}},
			{Id: "color", Value: dashboard.FieldColor{Mode: dashboard.FieldColorModeIdThresholds}},
		}).
		DataLinks([]cog.Builder[dashboard.DashboardLink]{
			unplaced{dashboard.NewDashboardLinkBuilder("Replica ${__data.fields.replica}").
				Url("/d/" + ReplicaUID + "?var-replica=${__data.fields.replica}&var-model=${__data.fields.model}" +
					"&${" + k.o.DatasourceVariable + ":queryparam}&${__url_time_range}")},
		})
}

// attainment is the request-weighted share of requests within each SLO, per
// model, from kneewatch's good and total request counters over window.
func attainment(matchers []string, window string) string {
	return "sum by (model, slo) (rate(" + sel(catalog.MetricReplicaGoodRequests, matchers...) + "[" + window + "]))" +
		" / on (model) group_left () " +
		"sum by (model) (rate(" + sel(catalog.MetricReplicaRequests, matchers...) + "[" + window + "]))"
}

// burnRate is the error ratio over window divided by the error budget: 1
// spends the budget exactly over the SLO period, 14.4 spends a 30-day budget
// in about two days.
func burnRate(o Options, matchers []string, window string) string {
	return "(1 - " + attainment(matchers, window) + ") / (1 - " + num(o.Objective) + ")"
}

// probeSuccess is the share of probes that streamed, per replica. A replica
// whose probes all fail has no success series at all, so each side falls
// back to the other side times zero rather than vanishing from the panel.
func probeSuccess(matchers []string) string {
	ok := "sum by (replica) (rate(" + sel(catalog.MetricProbeSuccess, matchers...) + "[" + probeWindow + "]))"
	failed := "sum by (replica) (rate(" + sel(catalog.MetricProbeFailures, matchers...) + "[" + probeWindow + "]))"
	okOrZero := "(" + ok + " or " + failed + " * 0)"
	failedOrZero := "(" + failed + " or " + ok + " * 0)"
	return okOrZero + " / (" + okOrZero + " + " + failedOrZero + ")"
}
