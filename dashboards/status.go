package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/kneewatch/kneewatch/catalog"
)

// statusHeight is the height of the kneewatch status row at the top of
// every dashboard; the panels under it start there.
const statusHeight = 3

// Evaluation ages at which the last-evaluation panel turns orange and red.
// kneewatch evaluates every 5 s by default and Prometheus scrapes it every
// 15 to 30 s, so a fresh figure is under a minute old; two minutes is
// several missed scrapes or a stuck evaluation loop.
const (
	staleEvaluation = 60
	deadEvaluation  = 120
)

// statusCards are the status row's panels. Each dashboard gives them IDs
// after its own panels' (so existing panel links keep working).
func statusCards(firstID uint32) (up, age, watched card) {
	up = card{firstID, 0, 0, 8, statusHeight, "kneewatch up",
		"Is every selected kneewatch instance scraped by Prometheus and up?", unitNone}
	age = card{firstID + 1, 8, 0, 8, statusHeight, "Last evaluation",
		"How long ago did the stalest selected kneewatch instance finish an evaluation round?", unitSeconds}
	watched = card{firstID + 2, 16, 0, 8, statusHeight, "Replicas watched",
		"How many replicas do the selected kneewatch instances watch, evaluated or not?", unitCount}
	return up, age, watched
}

// statusRow adds the kneewatch status panels: whether kneewatch is up, how
// old its last evaluation is and how many replicas it watches. Every other
// panel reads kneewatch's series, which vanish when it stops; these say why.
func (k kit) statusRow(b *dashboard.DashboardBuilder, firstID uint32) {
	upCard, ageCard, watchedCard := statusCards(firstID)
	up := 1.0
	down := 0.0
	b.WithPanel(k.stat(upCard, kneewatchDown,
		query{expr: "min(" + selName("up", byClusterOrNone, byJob) + ")", legend: "up"}).
		Mappings([]dashboard.ValueMapping{
			emptyMapping(kneewatchDown),
			{ValueMap: &dashboard.ValueMap{
				Type: dashboard.MappingTypeValueToText,
				Options: map[string]dashboard.ValueMappingResult{
					num(up):   {Text: cog.ToPtr("up"), Color: cog.ToPtr("green")},
					num(down): {Text: cog.ToPtr("down"), Color: cog.ToPtr("red")},
				},
			}},
		}))
	b.WithPanel(k.stat(ageCard, kneewatchDown,
		query{expr: "time() - " + lastEvaluation(), legend: "age"}).
		Thresholds(thresholds("green", threshold{staleEvaluation, "orange"}, threshold{deadEvaluation, "red"})))
	b.WithPanel(k.stat(watchedCard, kneewatchDown,
		query{expr: zeroWhileUp("count(" + sel(catalog.MetricReplicaEvalOK, served()...) + ")"), legend: "replicas"}).
		ColorMode(common.BigValueColorModeValue).
		Thresholds(thresholds("text")))
}
