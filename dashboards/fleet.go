package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/table"

	"github.com/kneewatch/kneewatch/catalog"
)

// The fleet dashboard's panels, in reading order. IDs and places are fixed
// so links and bookmarks to a panel keep working across versions.
var (
	fleetLowestHeadroom = card{1, 0, 0, 6, 4, "Lowest replica headroom", "How close to its knee is the replica nearest to it?", unitRatio}
	fleetPastPage       = card{2, 6, 0, 6, 4, "Replicas past the page threshold", "How many replicas have less headroom than the page threshold, or are past their knee?", unitCount}
	fleetBelowWarning   = card{3, 12, 0, 6, 4, "Replicas below the warning threshold", "How many replicas have less headroom than the warning threshold?", unitCount}
	fleetMissing        = card{4, 18, 0, 6, 4, "Replicas missing", "How many replicas does the fleet lack, summed over models, to serve today's goodput with the target headroom?", unitCount}
	fleetHeadroomTable  = card{5, 0, 4, 12, 10, "Headroom per replica", "Which replicas are nearest their knee, tightest first? Click one for its Replica dashboard.", unitRatio}
	fleetNeeded         = card{6, 12, 4, 12, 10, "Replicas needed vs available", "Does each model have enough replicas for its offered goodput?", unitCount}
	fleetGoodput        = card{7, 0, 14, 12, 8, "Goodput vs throughput", "How many output tokens per second does each model serve, and how many of them met the SLO?", unitTokensPerSecond}
	fleetModelHeadroom  = card{8, 12, 14, 12, 8, "Fleet headroom per model", "How much load can each model's fleet still absorb before it is at the knee as a whole?", unitRatio}
	fleetAttainment     = card{9, 0, 22, 12, 8, "SLO attainment", "What share of each model's requests met each latency SLO?", unitRatio}
	fleetBurn           = card{10, 12, 22, 12, 8, "Error budget burn rate", "How fast is each model spending its error budget, against the page burn rates?", unitTimes}
	fleetAlerts         = card{11, 0, 30, 12, 8, "Firing kneewatch alerts", "Which kneewatch alerts are firing now, and for which replica or model?", unitNone}
	fleetProbes         = card{12, 12, 30, 12, 8, "Probe success", "Do synthetic requests to each replica still stream tokens?", unitRatio}
	fleetNotEvaluated   = card{13, 0, 38, 12, 8, "Replicas not evaluated", "Which replicas have no headroom figure, and why?", unitNone}
	fleetTargetsDown    = card{14, 12, 38, 12, 8, "Targets down", "Which engine or DCGM endpoints did the last scrape fail to read?", unitNone}
)

// Fleet builds the fleet capacity dashboard, the on-call's landing page.
func Fleet(opts Options) (dashboard.Dashboard, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return dashboard.Dashboard{}, err
	}
	k := newKit(o)
	headroom := sel(catalog.MetricReplicaHeadroom, byModel)

	b := dashboard.NewDashboardBuilder(o.TitlePrefix+" / Fleet capacity").
		Uid(FleetUID).
		Description("How close every LLM-serving replica is to its knee, and how much capacity each model lacks.").
		Tags(tags).
		Editable().
		Refresh("30s").
		Time("now-3h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(k.datasourceVariable()).
		WithVariable(k.modelVariable()).
		Link(linkTo("Replica", ReplicaUID, "One replica's operating point against its knee"))

	b.WithPanel(k.stat(fleetLowestHeadroom,
		query{expr: "min(" + headroom + ")", legend: "lowest"}).
		Thresholds(k.headroomThresholds()))
	b.WithPanel(k.stat(fleetPastPage,
		query{expr: "count(" + headroom + " < " + num(o.PageHeadroom) + ") or vector(0)", legend: "replicas"}).
		Thresholds(thresholds("green", threshold{1, "red"})))
	b.WithPanel(k.stat(fleetBelowWarning,
		query{expr: "count(" + headroom + " < " + num(o.WarningHeadroom) + ") or vector(0)", legend: "replicas"}).
		Thresholds(thresholds("green", threshold{1, "orange"})))
	b.WithPanel(k.stat(fleetMissing,
		query{expr: "sum(clamp_min(ceil(" + sel(catalog.MetricFleetNeeded, byModel) + ") - " +
			sel(catalog.MetricFleetReplicas, byModel) + ", 0)) or vector(0)", legend: "replicas"}).
		Thresholds(thresholds("green", threshold{1, "red"})))

	b.WithPanel(k.headroomTable())

	b.WithPanel(k.timeseries(fleetNeeded,
		query{sel(catalog.MetricFleetNeeded, byModel), "{{model}} needed"},
		query{sel(catalog.MetricFleetReplicas, byModel), "{{model}} available"}).
		Min(0).
		OverrideByQuery("A", reference("red")))

	b.WithPanel(k.timeseries(fleetGoodput,
		query{"sum by (model) (" + sel(catalog.MetricReplicaOutputTPS, byModel) + ")", "{{model}} output"},
		query{"sum by (model) (" + sel(catalog.MetricReplicaGoodput, byModel) + ")", "{{model}} goodput"}).
		Min(0))

	b.WithPanel(k.timeseries(fleetModelHeadroom,
		query{sel(catalog.MetricFleetHeadroom, byModel), "{{model}}"}).
		Max(1).
		Thresholds(k.headroomThresholds()).
		ThresholdsStyle(thresholdLines()))

	b.WithPanel(k.timeseries(fleetAttainment,
		query{attainment(byModel, "$__rate_interval"), "{{model}} {{slo}}"}).
		Max(1).
		Thresholds(thresholds("red", threshold{o.Objective, "green"})).
		ThresholdsStyle(thresholdLines()))

	b.WithPanel(k.timeseries(fleetBurn,
		query{burnRate(o, byModel, burnFastWindow), "{{model}} {{slo}} over " + burnFastWindow},
		query{burnRate(o, byModel, burnSlowWindow), "{{model}} {{slo}} over " + burnSlowWindow}).
		Min(0).
		Thresholds(thresholds("green", threshold{burnSlowFactor, "orange"}, threshold{burnFastFactor, "red"})).
		ThresholdsStyle(thresholdLines()))

	b.WithPanel(k.table(fleetAlerts,
		query{expr: "max by (alertname, severity, model, replica) (" +
			selName(alertsMetric, `alertname=~"`+alertPrefix+`.*"`, `alertstate="firing"`) + ")"}).
		WithTransformation(columns("", "alertname", "severity", "model", "replica")).
		SortBy([]cog.Builder[common.TableSortByFieldState]{
			common.NewTableSortByFieldStateBuilder().DisplayName("severity"),
		}))

	b.WithPanel(k.timeseries(fleetProbes,
		query{probeSuccess(byModel), "{{replica}}"}).
		Min(0).Max(1).
		Thresholds(thresholds("red", threshold{0.9, "green"})).
		ThresholdsStyle(thresholdLines()))

	b.WithPanel(k.table(fleetNotEvaluated,
		query{expr: "max by (replica, model, reason) (" + sel(catalog.MetricReplicaEvalOK, byModel) + ") == 0"}).
		WithTransformation(columns("", "replica", "model", "reason")))

	b.WithPanel(k.table(fleetTargetsDown,
		query{expr: "max by (replica, source) (" + sel(catalog.MetricTargetUp) + ") == 0"}).
		WithTransformation(columns("", "replica", "source")))

	return b.Build()
}

// headroomTable lists replicas tightest first, each cell a gauge coloured by
// the alert thresholds and linked to the replica's own dashboard.
func (k kit) headroomTable() *table.PanelBuilder {
	gauge := common.BarGaugeDisplayModeBasic
	return k.table(fleetHeadroomTable,
		query{expr: "sort(min by (replica, model) (" + sel(catalog.MetricReplicaHeadroom, byModel) + "))"}).
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
func attainment(matcher, window string) string {
	return "sum by (model, slo) (rate(" + sel(catalog.MetricReplicaGoodRequests, matcher) + "[" + window + "]))" +
		" / on (model) group_left () " +
		"sum by (model) (rate(" + sel(catalog.MetricReplicaRequests, matcher) + "[" + window + "]))"
}

// burnRate is the error ratio over window divided by the error budget: 1
// spends the budget exactly over the SLO period, 14.4 spends a 30-day budget
// in about two days.
func burnRate(o Options, matcher, window string) string {
	return "(1 - " + attainment(matcher, window) + ") / (1 - " + num(o.Objective) + ")"
}

// probeSuccess is the share of probes that streamed, per replica. A replica
// whose probes all fail has no success series at all, so each side falls
// back to the other side times zero rather than vanishing from the panel.
func probeSuccess(matcher string) string {
	ok := "sum by (replica) (rate(" + sel(catalog.MetricProbeSuccess, matcher) + "[" + probeWindow + "]))"
	failed := "sum by (replica) (rate(" + sel(catalog.MetricProbeFailures, matcher) + "[" + probeWindow + "]))"
	okOrZero := "(" + ok + " or " + failed + " * 0)"
	failedOrZero := "(" + failed + " or " + ok + " * 0)"
	return okOrZero + " / (" + okOrZero + " + " + failedOrZero + ")"
}
