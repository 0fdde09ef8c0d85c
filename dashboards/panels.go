package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/kneewatch/kneewatch/catalog"
)

// Units the panels use. Grafana has no token unit; a suffix keeps the
// number unscaled and says what it counts.
const (
	unitRatio           = "percentunit"
	unitSeconds         = "s"
	unitCount           = "short"
	unitTokensPerSecond = "suffix: tok/s"
	unitPerSecond       = "suffix:/s"
	unitTimes           = "suffix:×"
	unitNone            = "none"
)

// card is what every panel has: a stable ID, a fixed place on the 24-column
// grid, a title, the question it answers (its description, and its row in
// the README) and a unit.
type card struct {
	id         uint32
	x, y, w, h uint32
	title      string
	question   string
	unit       string
}

func (c card) gridPos() dashboard.GridPos {
	return dashboard.GridPos{X: c.x, Y: c.y, W: c.w, H: c.h}
}

// query is one PromQL target of a panel.
type query struct {
	expr   string
	legend string
}

// kit builds panels that share the dashboard's data source and options.
type kit struct {
	o  Options
	ds common.DataSourceRef
}

func newKit(o Options) kit {
	return kit{o: o, ds: common.DataSourceRef{
		Type: cog.ToPtr("prometheus"),
		Uid:  cog.ToPtr("${" + o.DatasourceVariable + "}"),
	}}
}

// refID names the i-th target of a panel: A, B, C…
func refID(i int) string { return string(rune('A' + i)) }

// target is the i-th query of a panel.
func target(q query, i int) *prometheus.DataqueryBuilder {
	t := prometheus.NewDataqueryBuilder().Expr(q.expr).RefId(refID(i))
	if q.legend != "" {
		t = t.LegendFormat(q.legend)
	}
	return t
}

// rangeTargets are time-series targets, one per query.
func rangeTargets(qs []query) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], 0, len(qs))
	for i, q := range qs {
		out = append(out, target(q, i).Range())
	}
	return out
}

// instantTargets are instant targets; table ones come back as one frame of
// labels and value, which is what a table shows.
func instantTargets(format prometheus.PromQueryFormat, qs []query) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], 0, len(qs))
	for i, q := range qs {
		out = append(out, target(q, i).Instant().Format(format))
	}
	return out
}

// timeseries is a line chart over the dashboard's time range.
func (k kit) timeseries(c card, qs ...query) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Id(c.id).Title(c.title).Description(c.question).GridPos(c.gridPos()).
		Datasource(k.ds).Unit(c.unit).
		Targets(rangeTargets(qs)).
		LineWidth(1).FillOpacity(0).ShowPoints(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true)).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderDescending))
}

// empty is what a stat panel says when its queries return nothing: the
// text, and a colour that is never a threshold's. Grafana colours a missing
// value with the base threshold colour, which is green on the count panels;
// a special-value mapping on null and NaN takes precedence over it.
type empty struct {
	text  string
	color string
}

// The empty states. A query gated on kneewatch's own series is empty only
// when kneewatch is not scraped (stopped, or up == 0 and its series
// stale); one that is not can also be empty while kneewatch runs, and
// says so.
var (
	kneewatchDown = empty{"kneewatch down", "red"}
	noData        = empty{"no data", "text"}
)

// stat is one big number, the latest value of an instant query, or the
// empty state's text when there is none: never a 0 that a dead kneewatch
// would show as healthy.
func (k kit) stat(c card, e empty, qs ...query) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Id(c.id).Title(c.title).Description(c.question).GridPos(c.gridPos()).
		Datasource(k.ds).Unit(c.unit).
		Targets(instantTargets(prometheus.PromQueryFormatTimeSeries, qs)).
		Orientation(common.VizOrientationAuto).
		ColorMode(common.BigValueColorModeBackground).
		GraphMode(common.BigValueGraphModeNone).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		NoValue(e.text).
		Mappings([]dashboard.ValueMapping{emptyMapping(e)})
}

// emptyMapping colours a missing value as the empty state says; the text
// is the panel's noValue.
func emptyMapping(e empty) dashboard.ValueMapping {
	return dashboard.ValueMapping{SpecialValueMap: &dashboard.SpecialValueMap{
		Type: dashboard.MappingTypeSpecialValue,
		Options: dashboard.DashboardSpecialValueMapOptions{
			Match:  dashboard.SpecialValueMatchNullAndNan,
			Result: dashboard.ValueMappingResult{Color: cog.ToPtr(e.color)},
		},
	}}
}

// zeroWhileUp is a count that is 0, not empty, while kneewatch runs: the
// count of query, or 0 if kneewatch's last-evaluation series exists. When
// kneewatch is down both sides are empty, and the panel says so.
func zeroWhileUp(count string) string {
	return count + " or on () (0 * " + lastEvaluation() + ")"
}

// lastEvaluation is the time of the oldest last evaluation among the
// selected kneewatch instances; it exists only while one is scraped.
func lastEvaluation() string {
	return "min(" + sel(catalog.MetricLastEvaluation, own()...) + ")"
}

// table lists the rows of instant queries: one row per series, one column
// per label.
func (k kit) table(c card, qs ...query) *table.PanelBuilder {
	return table.NewPanelBuilder().
		Id(c.id).Title(c.title).Description(c.question).GridPos(c.gridPos()).
		Datasource(k.ds).Unit(c.unit).
		Targets(instantTargets(prometheus.PromQueryFormatTable, qs)).
		ShowHeader(true).
		// An explicit empty reducer list: the SDK's default writes null.
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{}).CountRows(false))
}

// threshold is one colour step: from value up, the colour applies.
type threshold struct {
	value float64
	color string
}

// thresholds builds absolute steps over a base colour (below every step).
func thresholds(base string, steps ...threshold) *dashboard.ThresholdsConfigBuilder {
	out := []dashboard.Threshold{{Value: nil, Color: base}}
	for _, s := range steps {
		out = append(out, dashboard.Threshold{Value: cog.ToPtr(s.value), Color: s.color})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(out)
}

// headroomThresholds colour headroom red below the page threshold, orange
// below the warning threshold, green above.
func (k kit) headroomThresholds() *dashboard.ThresholdsConfigBuilder {
	return thresholds("red",
		threshold{k.o.PageHeadroom, "orange"},
		threshold{k.o.WarningHeadroom, "green"})
}

// thresholdLines draws a time series panel's thresholds as dashed lines.
func thresholdLines() *common.GraphThresholdsStyleConfigBuilder {
	return common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)
}

// reference styles the series of a query as a reference line (the knee, the
// SLO): dashed, in a fixed colour, so it reads as a limit, not as load.
func reference(color string) []dashboard.DynamicConfigValue {
	dash := common.LineStyleFillDash
	return []dashboard.DynamicConfigValue{
		{Id: "custom.lineStyle", Value: common.LineStyle{Fill: &dash, Dash: []float64{10, 10}}},
		{Id: "color", Value: dashboard.FieldColor{Mode: dashboard.FieldColorModeIdFixed, FixedColor: cog.ToPtr(color)}},
	}
}

// organize is the options of Grafana's "organize fields" transformation.
type organize struct {
	ExcludeByName map[string]bool   `json:"excludeByName,omitempty"`
	RenameByName  map[string]string `json:"renameByName,omitempty"`
	IndexByName   map[string]int    `json:"indexByName,omitempty"`
}

// columns keeps a table's label columns in the given order, drops the rest
// of what an instant table query returns (Time, and Value unless renamed)
// and names the value column.
func columns(valueName string, labels ...string) dashboard.DataTransformerConfig {
	o := organize{
		ExcludeByName: map[string]bool{"Time": true, "__name__": true, "job": true, "instance": true},
		IndexByName:   map[string]int{},
	}
	for i, l := range labels {
		o.IndexByName[l] = i
	}
	if valueName == "" {
		o.ExcludeByName["Value"] = true
	} else {
		o.RenameByName = map[string]string{"Value": valueName}
		o.IndexByName["Value"] = len(labels)
	}
	return dashboard.DataTransformerConfig{Id: "organize", Options: o}
}
