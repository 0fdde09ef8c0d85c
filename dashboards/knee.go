package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/xychart"

	"github.com/kneewatch/kneewatch/catalog"
)

// replicaKnee is the knee panel: the replica's profile curve (throughput
// and p99 latencies against concurrency) with its knee and its live
// operating point on it.
var replicaKnee = card{25, 0, 7, 24, 11, "Knee curve and operating point",
	"Where on its profile's latency-throughput curve does the replica run now, and how far is it from the knee?", unitTokensPerSecond}

// The knee panel's targets, by what they draw. Their frames: the curve
// (A-C, one row per swept concurrency), the knee (D-E) and the live
// operating point (F-I), each joined into one frame of numbers.
const (
	kneeCurveRefs = "/^[ABC]$/"
	kneePointRefs = "/^[DE]$/"
	kneeLiveRefs  = "/^[FGHI]$/"
)

// kneeQueries are the knee panel's targets, in refID order: the curve of
// the replica's profile, its knee, and where the replica is now. The curve
// series are per profile; "and on (profile)" with the replica's knee
// series picks its profile's, and max by (concurrency) folds the copies
// several kneewatch instances export.
func kneeQueries(replica func(catalog.MetricDesc, ...string) string) []query {
	curve := func(d catalog.MetricDesc) string {
		return "max by (concurrency) (" + sel(d, own()...) + " and on (profile) " + replica(catalog.MetricKneeConcurrency) + ")"
	}
	one := func(expr string) string { return "max by (replica) (" + expr + ")" }
	return []query{
		{curve(catalog.MetricProfileCurveOutputTPS), "profile output tok/s"},
		{curve(catalog.MetricProfileCurveTTFT), "profile p99 TTFT"},
		{curve(catalog.MetricProfileCurveTPOT), "profile p99 TPOT"},
		{one(replica(catalog.MetricKneeConcurrency)), "knee concurrency"},
		{one(replica(catalog.MetricKneeOutputTPS)), "knee output tok/s"},
		{one(replica(catalog.MetricReplicaInflight)), "in flight now"},
		{one(replica(catalog.MetricReplicaOutputTPS)), "output tok/s now"},
		{one(replica(catalog.MetricReplicaTTFT, eq("quantile", "0.99"))), "p99 TTFT now"},
		{one(replica(catalog.MetricReplicaTPOT, eq("quantile", "0.99"))), "p99 TPOT now"},
	}
}

// kneePanel is an XY chart. Instant table queries give one frame per
// target; the transformations make three frames of numbers: the curve
// (concurrency, throughput, latencies), the knee (concurrency,
// throughput) and the live point (in flight, throughput, latencies).
// With auto mapping, each frame's first number is x and the others are y,
// so the frames' order does not matter. Throughput is on the left axis,
// latencies (seconds) on the right; the knee and the live point are large
// points, the curve a line with a point per swept concurrency.
func (k kit) kneePanel(c card, qs []query) *xychart.PanelBuilder {
	b := xychart.NewPanelBuilder().
		Id(c.id).Title(c.title).Description(c.question).GridPos(c.gridPos()).
		Datasource(k.ds).Unit(c.unit).
		Targets(instantTargets(prometheus.PromQueryFormatTable, qs)).
		Mapping(xychart.SeriesMappingAuto).
		Show(xychart.XYShowModePointsAndLines).
		PointSize(xychart.NewXychartFieldConfigPointSizeBuilder().Fixed(4)).
		LineWidth(2).
		AxisSoftMin(0).
		AxisLabel("output tokens/s").
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true)).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti))
	for _, tr := range []dashboard.DataTransformerConfig{
		// Concurrency is a label, so a string column: make it a number.
		{Id: "convertFieldType", Options: map[string]any{
			"conversions": []map[string]any{{"targetField": "concurrency", "destinationType": "number"}},
		}},
		{Id: "joinByField", Filter: refs(kneeCurveRefs), Options: map[string]any{"byField": "concurrency", "mode": "outer"}},
		{Id: "joinByField", Filter: refs(kneePointRefs), Options: map[string]any{"byField": "replica", "mode": "outer"}},
		{Id: "joinByField", Filter: refs(kneeLiveRefs), Options: map[string]any{"byField": "replica", "mode": "outer"}},
		{Id: "sortBy", Options: map[string]any{"sort": []map[string]any{{"field": "concurrency"}}}},
	} {
		b = b.WithTransformation(tr)
	}
	for i, q := range qs {
		props := []dashboard.DynamicConfigValue{{Id: "displayName", Value: q.legend}}
		switch refID(i) {
		case "B", "C", "H", "I":
			props = append(props,
				dashboard.DynamicConfigValue{Id: "unit", Value: unitSeconds},
				dashboard.DynamicConfigValue{Id: "custom.axisPlacement", Value: common.AxisPlacementRight},
				dashboard.DynamicConfigValue{Id: "custom.axisLabel", Value: "p99 latency"})
		}
		switch refID(i) {
		case "E":
			props = append(props, bigPoint("orange")...)
		case "G", "H", "I":
			props = append(props, bigPoint("red")...)
		}
		b = b.OverrideByName("Value #"+refID(i), props)
	}
	return b
}

// bigPoint draws a field as one large point in a fixed colour.
func bigPoint(color string) []dashboard.DynamicConfigValue {
	return []dashboard.DynamicConfigValue{
		{Id: "custom.show", Value: xychart.XYShowModePoints},
		{Id: "custom.pointSize", Value: xychart.XychartFieldConfigPointSize{Fixed: cog.ToPtr[int32](12)}},
		{Id: "color", Value: dashboard.FieldColor{Mode: dashboard.FieldColorModeIdFixed, FixedColor: cog.ToPtr(color)}},
	}
}

// refs is a transformation filter on the frames of the targets whose refID
// matches re.
func refs(re string) *dashboard.MatcherConfig {
	return &dashboard.MatcherConfig{Id: "byRefId", Options: re}
}
