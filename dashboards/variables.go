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

// labelValues is a query variable over one label of a metric.
func (k kit) labelValues(name, label, query string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(k.ds).
		Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortNaturalAsc)
}

// clusterVariable selects the cluster, from the cluster label Prometheus
// adds as an external label (or a relabelling) to every series, as the
// kubernetes-mixin's dashboards do. It is hidden unless Options.MultiCluster
// is set (the mixin's showMultiCluster): with one cluster, or no cluster
// label at all, it holds that one value or none, and an empty value matches
// series without the label.
func (k kit) clusterVariable() *dashboard.QueryVariableBuilder {
	v := k.labelValues("cluster", "Cluster",
		"label_values("+catalog.MetricBuildInfo.Name+", cluster)")
	if !k.o.MultiCluster {
		v = v.Hide(dashboard.VariableHideHideVariable)
	}
	return v
}

// jobVariable selects the kneewatch scrape jobs: every job with a
// kneewatch_build_info series, which only kneewatch exports. All is the
// list of the jobs found, not ".*", so up{job=~"$job"} never reads other
// jobs' targets.
func (k kit) jobVariable() *dashboard.QueryVariableBuilder {
	return k.labelValues("job", "Job",
		"label_values("+selName(catalog.MetricBuildInfo.Name, byCluster)+", job)").
		Multi(true).IncludeAll(true)
}

// namespaceVariable selects the served replicas' namespaces. It reads
// kneewatch_replica_evaluation_ok because every watched replica has that
// series, whether or not its headroom could be computed.
func (k kit) namespaceVariable() *dashboard.QueryVariableBuilder {
	return k.labelValues("namespace", "Namespace",
		"label_values("+sel(catalog.MetricReplicaEvalOK, byCluster, byJob)+", namespace)").
		Multi(true).IncludeAll(true).AllValue(".*")
}

// modelVariable selects one or more served models (all by default).
func (k kit) modelVariable() *dashboard.QueryVariableBuilder {
	return k.labelValues("model", "Model",
		"label_values("+sel(catalog.MetricReplicaEvalOK, served()...)+", model)").
		Multi(true).IncludeAll(true).AllValue(".*")
}

// replicaVariable selects one replica of the selected models.
func (k kit) replicaVariable() *dashboard.QueryVariableBuilder {
	return k.labelValues("replica", "Replica",
		"label_values("+sel(catalog.MetricReplicaEvalOK, served(byModel)...)+", replica)")
}

// podVariable is the served replica's pod (hidden): kneewatch names a
// discovered replica namespace/pod and puts the pod in the pod label, so
// the GPU join reads the pod from there. A static target without a pod has
// none, and the join falls back to the replica's name.
func (k kit) podVariable() *dashboard.QueryVariableBuilder {
	return k.labelValues("pod", "Pod",
		"label_values("+sel(catalog.MetricReplicaEvalOK, served(byReplica)...)+", pod)").
		Hide(dashboard.VariableHideHideVariable)
}

// gpuQuery lists the replica's GPUs in dcgm-exporter's series, joined on the
// pod. dcgm-exporter labels a GPU with the pod that holds it as pod and
// namespace; its chart's ServiceMonitor does not honor labels, so Prometheus
// keeps its own target labels there and renames dcgm-exporter's to
// exported_pod and exported_namespace. The query takes either, so the GPU
// panels work with the chart's defaults and with honorLabels: true. With the
// defaults, pod is the dcgm-exporter pod, never a replica, so the two sides
// do not both match. Replicas are pods named as the replica, in Kubernetes
// and in the simulator.
func gpuQuery() string {
	// The pod, or the replica's own name where it has no pod label; never a
	// GPU that no pod holds (an empty label matches the empty alternative).
	exported := selName(dcgmGPUUtil, byClusterOrNone, `exported_pod!=""`, `exported_pod=~"$pod|$replica"`, `exported_namespace=~"$namespace"`)
	honored := selName(dcgmGPUUtil, byClusterOrNone, `pod!=""`, `pod=~"$pod|$replica"`, byNamespace)
	return "max by (UUID) (" + exported + " or " + honored + ")"
}

// gpuVariable selects the replica's GPUs (see gpuQuery). label_values can
// only take a series selector, so this is a query_result variable whose
// regex picks the UUID out of each result. kneewatch exports no series tying
// a replica to its GPU UUIDs, so where pods are named otherwise the on-call
// types a UUID (or a regex of several) instead. "All" is every GPU of the
// replica, for tensor-parallel replicas.
func (k kit) gpuVariable() *dashboard.QueryVariableBuilder {
	return k.labelValues("gpu", "GPU (DCGM UUID)", "query_result("+gpuQuery()+")").
		Regex(`/UUID="([^"]+)"/`).
		Description("GPUs of the replica in dcgm-exporter's series (exported_pod, or pod with honorLabels, = replica); type a UUID if your pods are named otherwise.").
		Multi(true).IncludeAll(true).AllowCustomValue(true)
}

// variables are every dashboard's first variables, in the order each
// narrows the next: data source, cluster, kneewatch job, namespace.
func (k kit) variables(b *dashboard.DashboardBuilder) *dashboard.DashboardBuilder {
	return b.WithVariable(k.datasourceVariable()).
		WithVariable(k.clusterVariable()).
		WithVariable(k.jobVariable()).
		WithVariable(k.namespaceVariable())
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

// byTags is a dashboard link listing every dashboard with all of tags, as a
// dropdown, carrying the time range (not the variables: other projects'
// dashboards name theirs differently).
func byTags(title, tooltip string, tags []string) unplaced {
	return unplaced{dashboard.NewDashboardLinkBuilder(title).
		Type(dashboard.DashboardLinkTypeDashboards).
		Tags(tags).
		AsDropdown(true).
		Tooltip(tooltip).
		Icon("external link").
		KeepTime(true)}
}

// upstreamLinks link to the engine's and the GPUs' own dashboards by tag.
// vLLM's dashboards (examples/observability/dashboards/grafana) carry the
// tag vllm and link one another by it. NVIDIA's dcgm-exporter dashboard
// ships with no tags, so the DCGM link finds it once it is tagged dcgm on
// import (or whatever Options.DCGMDashboardTags names).
func (k kit) upstreamLinks(b *dashboard.DashboardBuilder) *dashboard.DashboardBuilder {
	return b.
		Link(byTags("vLLM", "vLLM's dashboards: the engine's own view of these replicas", k.o.VLLMDashboardTags)).
		Link(byTags("DCGM", "GPU dashboards from dcgm-exporter's metrics", k.o.DCGMDashboardTags))
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
