package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/kneewatch/kneewatch/catalog"
)

// Stable dashboard UIDs: links, alert annotations and bookmarks use them.
const (
	FleetUID   = "kneewatch-fleet"
	ReplicaUID = "kneewatch-replica"
)

// tags mark every kneewatch dashboard, for Grafana's search.
var tags = []string{"kneewatch", "llm-serving", "capacity"}

// datasourceVariable picks the Prometheus that scrapes kneewatch.
func (k kit) datasourceVariable() *dashboard.DatasourceVariableBuilder {
	v := dashboard.NewDatasourceVariableBuilder(k.o.DatasourceVariable).
		Label("Data source").
		Type("prometheus")
	if k.o.DefaultDatasource != "" {
		v = v.Current(dashboard.VariableOption{
			Text:  dashboard.StringOrArrayOfString{String: cog.ToPtr(k.o.DefaultDatasource)},
			Value: dashboard.StringOrArrayOfString{String: cog.ToPtr(k.o.DefaultDatasource)},
		})
	}
	return v
}

// labelValues is a query variable over one label of a metric. It reads
// kneewatch_replica_evaluation_ok because every watched replica has that
// series, whether or not its headroom could be computed.
func (k kit) labelValues(name, label, query string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(k.ds).
		Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortNaturalAsc)
}

// modelVariable selects one or more served models (all by default).
func (k kit) modelVariable() *dashboard.QueryVariableBuilder {
	return k.labelValues("model", "Model",
		"label_values("+catalog.MetricReplicaEvalOK.Name+", model)").
		Multi(true).IncludeAll(true).AllValue(".*")
}

// replicaVariable selects one replica of the selected models.
func (k kit) replicaVariable() *dashboard.QueryVariableBuilder {
	return k.labelValues("replica", "Replica",
		"label_values("+sel(catalog.MetricReplicaEvalOK, byModel)+", replica)")
}

// gpuVariable selects the replica's GPUs in dcgm-exporter's series: those
// whose pod label is the replica's name, as in Kubernetes (where replicas are
// pods) and in the simulator. kneewatch exports no series tying a replica to
// its GPU UUIDs, so where the names differ the on-call types a UUID (or a
// regex of several) instead. "All" is every GPU of the replica, for
// tensor-parallel replicas.
func (k kit) gpuVariable() *dashboard.QueryVariableBuilder {
	return k.labelValues("gpu", "GPU (DCGM UUID)",
		"label_values("+selName(dcgmGPUUtil, `pod="$replica"`)+", UUID)").
		Description("GPUs of the replica in dcgm-exporter's series (pod label = replica); type a UUID if your pods are named otherwise.").
		Multi(true).IncludeAll(true).AllowCustomValue(true)
}

// linkTo is a dashboard link that carries the time range and the variables
// (data source, model, replica) over to the other dashboard.
func linkTo(title, uid, tooltip string) unplaced {
	return unplaced{dashboard.NewDashboardLinkBuilder(title).
		Type(dashboard.DashboardLinkTypeLink).
		Url("/d/" + uid).
		Tooltip(tooltip).
		Icon("dashboard").
		IncludeVars(true).
		KeepTime(true)}
}

// unplaced builds a link without a placement. The SDK's link builder
// defaults to placement "inControlsMenu", which Grafana 12 tucks away in the
// controls menu, where an on-call in a hurry would not look; without it a
// dashboard link shows beside the title. Data links have no placement at all.
type unplaced struct {
	*dashboard.DashboardLinkBuilder
}

func (l unplaced) Build() (dashboard.DashboardLink, error) {
	link, err := l.DashboardLinkBuilder.Build()
	link.Placement = nil
	return link, err
}
