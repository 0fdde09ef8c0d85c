package dashboards

import (
	"strconv"
	"strings"

	"github.com/kneewatch/kneewatch/catalog"
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

// Label matchers on dashboard variables. The model variable is multi-value
// (so a regex match); the replica variable is single-value, and Grafana
// interpolates it unescaped, so it is matched exactly.
const (
	byModel   = `model=~"$model"`
	byReplica = `replica="$replica"`
	byGPU     = `UUID=~"$gpu"`
)

// probeWindow is the range over which probe counters and histograms are
// rated. Probes run about once per 30 s, so Grafana's $__rate_interval would
// often hold no probe at all; 10m holds about twenty.
const probeWindow = "10m"

// Burn-rate windows and factors of the generated page alerts (fast: 14.4×
// over 1h, slow: 6× over 6h), drawn on the error-budget panel.
const (
	burnFastWindow = "1h"
	burnSlowWindow = "6h"
	burnFastFactor = 14.4
	burnSlowFactor = 6
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
