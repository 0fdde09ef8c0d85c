package dashboards

import (
	"strconv"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/rules"
)

// Upstream metrics the dashboards read directly, all dcgm-exporter default
// counters (docs/upstream-metrics.md §6.1). Everything else comes from kneewatch's
// own catalog, which is engine-neutral and carries the replica label.
const (
	dcgmGPUUtil      = "DCGM_FI_DEV_GPU_UTIL"            // 0..100, any kernel running; lists GPUs
	dcgmTensorActive = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" // 0..1, tensor (HMMA) pipe busy
	dcgmDRAMActive   = "DCGM_FI_PROF_DRAM_ACTIVE"        // 0..1, memory bandwidth busy
)

// alertsMetric is Prometheus's built-in series of pending and firing alerts.
const alertsMetric = "ALERTS"

// alertPrefix starts the name of every alert the generated rules define.
const alertPrefix = "Kneewatch"

// Label matchers on dashboard variables. Multi-value variables (job,
// namespace, model, GPU) are regex matches; single-value ones (cluster,
// replica) are interpolated unescaped, so they are matched exactly. A
// variable with no value (no cluster label anywhere, say) matches series
// without the label, so the dashboards work with and without it.
//
// byCluster is for kneewatch's own series, which carry the cluster from
// kneewatch's global.external_labels. byClusterOrNone is for the series
// Prometheus makes (up, ALERTS) or scrapes from others (dcgm-exporter):
// in one cluster they have no cluster label (Prometheus's external_labels
// only label data that leaves it), in a Thanos or Mimir view of several
// they have their own. It matches the selected cluster, or none.
const (
	byCluster       = `cluster="$cluster"`
	byClusterOrNone = `cluster=~"$cluster|"`
	byJob           = `job=~"$job"`
	byNamespace     = `namespace=~"$namespace"`
	byModel         = `model=~"$model"`
	byReplica       = `replica="$replica"`
	byGPU           = `UUID=~"$gpu"`
)

// own scopes series of kneewatch itself and its per-model fleet series:
// the cluster and the kneewatch job, never the namespace, which is the
// served replica's and which those series do not have.
func own(matchers ...string) []string {
	return append([]string{byCluster, byJob}, matchers...)
}

// served scopes per-replica series: kneewatch's cluster and job, and the
// served replica's namespace.
func served(matchers ...string) []string {
	return append([]string{byCluster, byJob, byNamespace}, matchers...)
}

// probeWindow is the range over which probe counters and histograms are
// rated. Probes run about once per 30 s, so Grafana's $__rate_interval would
// often hold no probe at all; 10m holds about twenty.
const probeWindow = "10m"

// Burn-rate windows and factors of the generated page alerts (by default
// fast: 14.4× over 1h, slow: 6× over 6h), drawn on the error-budget panel.
// They are read from the rules' defaults, so the panel's lines are the
// page's.
var (
	burnFastWindow = model.Duration(rules.DefaultOptions().SLO.Page[0].Long).String()
	burnSlowWindow = model.Duration(rules.DefaultOptions().SLO.Page[1].Long).String()
	burnFastFactor = rules.DefaultOptions().SLO.Page[0].Factor
	burnSlowFactor = rules.DefaultOptions().SLO.Page[1].Factor
)

// sel is a vector selector: a catalog metric and label matchers.
func sel(m catalog.MetricDesc, matchers ...string) string {
	return selName(m.Name, matchers...)
}

func selName(name string, matchers ...string) string {
	if len(matchers) == 0 {
		return name
	}
	return name + "{" + strings.Join(matchers, ", ") + "}"
}

// eq is a label equality matcher with a quoted value.
func eq(label, value string) string {
	return label + "=" + strconv.Quote(value)
}

// num formats a number for PromQL, shortest form first (0.05, 14.4).
func num(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// percent formats a ratio as a percentage for legends ("20%").
func percent(v float64) string {
	return strconv.FormatFloat(v*100, 'g', 4, 64) + "%"
}
