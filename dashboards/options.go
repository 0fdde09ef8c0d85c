// Package dashboards builds kneewatch's Grafana dashboards with the
// grafana-foundation-sdk: the fleet capacity landing page and the per-replica
// view. Queries name kneewatch's metrics through the catalog package, so a
// renamed metric breaks the build or the tests, never a dashboard silently.
package dashboards

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kneewatch/kneewatch/rules"
)

// Options tune the generated dashboards. The zero value of each field means
// its default (see DefaultOptions).
type Options struct {
	// DatasourceVariable names the dashboard's Prometheus data source
	// variable; every panel queries "${<name>}".
	DatasourceVariable string
	// DefaultDatasource is the data source (name or UID) the variable selects
	// when the dashboard loads. Empty: Grafana's default Prometheus source.
	DefaultDatasource string
	// TitlePrefix starts each dashboard title ("kneewatch / Fleet capacity").
	TitlePrefix string
	// PageHeadroom and WarningHeadroom are the headroom ratios below which
	// kneewatch pages and warns. They must match the generated alert rules;
	// the defaults are the rules' own (rules.DefaultOptions: 0, the knee,
	// and 0.2).
	PageHeadroom    float64
	WarningHeadroom float64
	// SLOQuantile is the value of the quantile label of the latency series
	// the SLO is written against ("0.99" for a p99 SLO).
	SLOQuantile string
	// Objective is the share of requests that must meet the SLO thresholds;
	// the error budget is 1 - Objective. Zero: the SLO quantile (a p99 SLO
	// lets 1% of requests exceed its threshold).
	Objective float64
	// MultiCluster shows the cluster variable, for a Prometheus (Thanos,
	// Mimir) that holds several clusters' series told apart by a cluster
	// label. Off, the variable is hidden, as the kubernetes-mixin's is
	// without showMultiCluster.
	MultiCluster bool
	// VLLMDashboardTags and DCGMDashboardTags are the tags of the
	// dashboards the "vLLM" and "DCGM" links list. Empty: vllm (the tag
	// vLLM's own dashboards carry) and dcgm (NVIDIA's dashboard has none;
	// add it on import).
	VLLMDashboardTags []string
	DCGMDashboardTags []string
	// Folder is the Grafana folder the ConfigMap output asks the sidecar to
	// put the dashboards in.
	Folder string
}

// The page's and the warning's headroom thresholds, read from the generated
// alert rules' defaults so the dashboards draw the lines the alerts use.
var (
	DefaultPageHeadroom    = rules.DefaultOptions().HeadroomExhausted.Below
	DefaultWarningHeadroom = rules.DefaultOptions().HeadroomLow.Below
)

// The defaults.
const (
	DefaultDatasourceVariable = "datasource"
	DefaultTitlePrefix        = "kneewatch"
	DefaultSLOQuantile        = "0.99"
	DefaultFolder             = "kneewatch"
	DefaultVLLMDashboardTag   = "vllm"
	DefaultDCGMDashboardTag   = "dcgm"
)

// DefaultOptions returns the options every zero field falls back to.
func DefaultOptions() Options {
	return Options{}.withDefaults()
}

// withDefaults fills zero fields with their defaults.
func (o Options) withDefaults() Options {
	if o.DatasourceVariable == "" {
		o.DatasourceVariable = DefaultDatasourceVariable
	}
	if o.TitlePrefix == "" {
		o.TitlePrefix = DefaultTitlePrefix
	}
	if o.PageHeadroom == 0 {
		o.PageHeadroom = DefaultPageHeadroom
	}
	if o.WarningHeadroom == 0 {
		o.WarningHeadroom = DefaultWarningHeadroom
	}
	if o.SLOQuantile == "" {
		o.SLOQuantile = DefaultSLOQuantile
	}
	if o.Objective == 0 {
		// A bad quantile is reported by validate; leave Objective 0 then.
		if q, err := strconv.ParseFloat(o.SLOQuantile, 64); err == nil {
			o.Objective = q
		}
	}
	if o.Folder == "" {
		o.Folder = DefaultFolder
	}
	if len(o.VLLMDashboardTags) == 0 {
		o.VLLMDashboardTags = []string{DefaultVLLMDashboardTag}
	}
	if len(o.DCGMDashboardTags) == 0 {
		o.DCGMDashboardTags = []string{DefaultDCGMDashboardTag}
	}
	return o
}

// validate reports every bad option at once, each naming the option.
func (o Options) validate() error {
	var errs []error
	bad := func(option, format string, args ...any) {
		errs = append(errs, fmt.Errorf("dashboards option %s: %s", option, fmt.Sprintf(format, args...)))
	}
	if !isVariableName(o.DatasourceVariable) {
		bad("datasource variable", "%q is not a Grafana variable name (letters, digits and _ only)", o.DatasourceVariable)
	}
	for _, h := range []struct {
		option string
		value  float64
	}{{"page headroom", o.PageHeadroom}, {"warning headroom", o.WarningHeadroom}} {
		if math.IsNaN(h.value) || h.value <= -1 || h.value >= 1 {
			bad(h.option, "%g is not a headroom ratio in (-1, 1)", h.value)
		}
	}
	if o.PageHeadroom >= o.WarningHeadroom {
		bad("page headroom", "%g must be below the warning headroom %g (the page is the later, tighter alarm)", o.PageHeadroom, o.WarningHeadroom)
	}
	q, err := strconv.ParseFloat(o.SLOQuantile, 64)
	quantileOK := err == nil && q > 0 && q < 1
	if !quantileOK {
		bad("SLO quantile", "%q is not a quantile label value in (0, 1), such as \"0.99\"", o.SLOQuantile)
	}
	// An unset objective follows the quantile: its error is the quantile's.
	if (quantileOK || o.Objective != 0) && !(o.Objective > 0 && o.Objective < 1) {
		bad("objective", "%g is not a share of requests in (0, 1), such as 0.99", o.Objective)
	}
	for _, t := range []struct {
		option string
		tags   []string
	}{{"vLLM dashboard tags", o.VLLMDashboardTags}, {"DCGM dashboard tags", o.DCGMDashboardTags}} {
		for _, tag := range t.tags {
			if strings.TrimSpace(tag) == "" {
				bad(t.option, "%q holds an empty tag", t.tags)
			}
		}
	}
	if strings.ContainsAny(o.Folder, "\n\r") {
		bad("folder", "%q spans lines", o.Folder)
	}
	return errors.Join(errs...)
}

func isVariableName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
