// Package catalog declares every metric family kneewatch exports, as data, so
// the exporter, the probes, the README, the generated rules and the generated
// dashboards agree on one list (tests check each against it).
package catalog

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricType is how a kneewatch metric behaves.
type MetricType string

// The metric types kneewatch exports.
const (
	Gauge     MetricType = "gauge"
	Counter   MetricType = "counter"
	Histogram MetricType = "histogram"
	Summary   MetricType = "summary"
)

// MetricDesc declares one metric family kneewatch exports. The catalog is data
// so the exporter, the README's metric table, the generated rules and the
// generated dashboards all agree on one list (tests check each against it).
type MetricDesc struct {
	Name   string
	Type   MetricType
	Help   string
	Labels []string
}

// Desc builds the client_golang descriptor for d.
func (d MetricDesc) Desc() *prometheus.Desc {
	return prometheus.NewDesc(d.Name, d.Help, d.Labels, nil)
}

// DescWith builds the descriptor with extra variable labels after d's own:
// the static config's per-target `labels`, whose names vary by target.
func (d MetricDesc) DescWith(extra []string) *prometheus.Desc {
	if len(extra) == 0 {
		return d.Desc()
	}
	return prometheus.NewDesc(d.Name, d.Help, slices.Concat(d.Labels, extra), nil)
}

// IdentityLabels name the served replica on every series about it: its
// kneewatch name, and its Kubernetes namespace and pod (empty, so absent,
// when it has none). namespace is what kube-prometheus-stack's Alertmanager
// groups and inhibits by, so it is what routes a page to the model's team.
var IdentityLabels = []string{"replica", "namespace", "pod"}

// Label names shared by the replica metrics.
var replicaLabels = []string{"replica", "model", "profile", "namespace", "pod"}

func withLabels(extra ...string) []string {
	return append(append([]string{}, replicaLabels...), extra...)
}

// Label names of the per-source scrape metrics and of the probe metrics.
var (
	sourceLabels = append(slices.Clone(IdentityLabels), "source")
	probeLabels  = []string{"replica", "model", "namespace", "pod"}
)

func withProbeLabels(extra ...string) []string {
	return append(slices.Clone(probeLabels), extra...)
}

// The exported metric families. Names follow Prometheus conventions: base
// units, _ratio for 0..1, _total only on counters.
var (
	MetricReplicaHeadroom = MetricDesc{"kneewatch_replica_headroom_ratio", Gauge,
		"Headroom to the knee: 1 minus the tightest knee load ratio; 1 is idle, 0 at the knee, negative past it.", replicaLabels}
	MetricReplicaKneeLoad = MetricDesc{"kneewatch_replica_knee_load_ratio", Gauge,
		"Live operating point divided by the knee's, per dimension (load, throughput, kv_cache, effective_load); 1 at the knee.", withLabels("dimension")}
	MetricReplicaInflight = MetricDesc{"kneewatch_replica_inflight_requests", Gauge,
		"Mean in-flight requests (running plus waiting) over the window.", replicaLabels}
	MetricReplicaRunning = MetricDesc{"kneewatch_replica_running_requests", Gauge,
		"Mean requests in the running batch over the window.", replicaLabels}
	MetricReplicaWaiting = MetricDesc{"kneewatch_replica_waiting_requests", Gauge,
		"Mean requests waiting to be scheduled over the window.", replicaLabels}
	MetricReplicaOutputTPS = MetricDesc{"kneewatch_replica_output_tokens_per_second", Gauge,
		"Output (generation) tokens per second over the window.", replicaLabels}
	MetricReplicaPromptTPS = MetricDesc{"kneewatch_replica_prompt_tokens_per_second", Gauge,
		"Prompt (prefill) tokens per second over the window.", replicaLabels}
	MetricReplicaGoodput = MetricDesc{"kneewatch_replica_goodput_tokens_per_second", Gauge,
		"Output tokens per second that met the SLO: output tokens/s times SLO attainment (an approximation of per-request goodput).", replicaLabels}
	MetricReplicaAttainment = MetricDesc{"kneewatch_replica_slo_attainment_ratio", Gauge,
		"Share of requests over the window within the SLO threshold, per SLO (ttft, tpot); exact when the threshold is a bucket edge of the engine's histogram, else the share up to the edge above it (an upper bound, never an interpolation).", withLabels("slo")}
	MetricReplicaRequests = MetricDesc{"kneewatch_replica_requests_total", Counter,
		"Requests the replica served, accumulated by kneewatch from the count of the engine's TTFT histogram (a request counts when its first token comes), for burn-rate windows.", replicaLabels}
	MetricReplicaGoodRequests = MetricDesc{"kneewatch_replica_slo_good_requests_total", Counter,
		"Requests within the SLO threshold, per SLO (ttft, tpot), accumulated by kneewatch (counted up to the bucket edge at or above the threshold when it is not an edge; for tpot, each scrape interval's share of TPOT observations within it times the requests that interval added to kneewatch_replica_requests_total, so the two counters stay in step).", withLabels("slo")}
	MetricReplicaTTFT = MetricDesc{"kneewatch_replica_ttft_seconds", Summary,
		"Time to first token from the engine's histogram: quantiles 0.5, 0.9 and 0.99 over the window (interpolated inside a bucket as histogram_quantile does, so only as precise as the bucket; a quantile is left out while the window holds fewer than 1/(1-q) requests, 100 for the 0.99); count and sum accumulate since kneewatch started.", replicaLabels}
	MetricReplicaTPOT = MetricDesc{"kneewatch_replica_tpot_seconds", Summary,
		"Time per output token from the engine's histogram: quantiles 0.5, 0.9 and 0.99 over the window (interpolated inside a bucket as histogram_quantile does, so only as precise as the bucket; a quantile is left out while the window holds fewer than 1/(1-q) requests, 100 for the 0.99); count and sum accumulate since kneewatch started.", replicaLabels}
	MetricReplicaKV = MetricDesc{"kneewatch_replica_kv_cache_usage_ratio", Gauge,
		"Mean KV-cache usage over the window, 0 to 1.", replicaLabels}
	MetricReplicaPreemptions = MetricDesc{"kneewatch_replica_preemptions_per_second", Gauge,
		"Preemptions per second over the window.", replicaLabels}
	MetricReplicaGPUUtil = MetricDesc{"kneewatch_replica_gpu_utilization_ratio", Gauge,
		"GPU utilization from DCGM, 0 to 1.", replicaLabels}
	MetricReplicaLimiting = MetricDesc{"kneewatch_replica_limiting_resource", Gauge,
		"1 for the resource that limits the replica at its knee (compute or kv_cache), 0 for the others.", withLabels("resource")}
	MetricReplicaMixDrift = MetricDesc{"kneewatch_replica_mix_drift_ratio", Gauge,
		"Relative distance of the live request mix (mean prompt and output tokens) from the profile's mix, over the window's finished requests less kneewatch's own probes, or, when the window finished fewer than 20, over the last 20 where their means are already off the profile's by more than 3 standard errors and 30%, else the shortest span of up to 10 minutes that finished 100 (or all 10 minutes); absent under 20 such requests.", replicaLabels}
	MetricReplicaInfo = MetricDesc{"kneewatch_replica_info", Gauge,
		"Constant 1 per watched replica, labeled with the serving engine whose metrics kneewatch reads (configured, or detected from the metric names).", withLabels("engine")}
	MetricReplicaEvalOK = MetricDesc{"kneewatch_replica_evaluation_ok", Gauge,
		"1 when the replica's headroom could be computed; 0 with the reason otherwise (no_profile, engine_down, scrape_memory_budget, no_engine_metrics, unusable_signal, warming_up, probes_failing, …).", withLabels("reason")}
	MetricTargetUp = MetricDesc{"kneewatch_target_up", Gauge,
		"1 when the last scrape of the replica's source (engine, dcgm) succeeded, 0 when it failed; absent while that scrape could not be made for want of room in the scrape memory budget (problem=\"memory_budget\").", sourceLabels}
	MetricKneeConcurrency = MetricDesc{"kneewatch_knee_concurrency", Gauge,
		"The knee concurrency of the replica's profile.", replicaLabels}
	MetricKneeOutputTPS = MetricDesc{"kneewatch_knee_output_tokens_per_second", Gauge,
		"Output tokens per second at the replica's knee.", replicaLabels}
	MetricKneeGoodput = MetricDesc{"kneewatch_knee_goodput_tokens_per_second", Gauge,
		"Goodput tokens per second at the replica's knee.", replicaLabels}
	MetricKneeKV = MetricDesc{"kneewatch_knee_kv_cache_usage_ratio", Gauge,
		"KV-cache usage at the replica's knee.", replicaLabels}
	MetricKneeKVReference = MetricDesc{"kneewatch_knee_kv_cache_reference_ratio", Gauge,
		"KV-cache usage at which the kv_cache dimension's knee ratio reads 1: the knee's own usage for a KV-bound knee without a mix model (or on a replica whose mean prompt and output are not measured), else the saturation level (or the knee's usage if higher). The ruler group divides the engine's KV usage by it.", replicaLabels}
	// The profile's measured latency-throughput curve, one series per swept
	// concurrency and per profile (not per replica: replicas sharing a
	// profile share its curve, joined on the profile label), so the
	// dashboards can draw the curve the knee was found on.
	MetricProfileCurveOutputTPS = MetricDesc{"kneewatch_profile_curve_output_tokens_per_second", Gauge,
		"Output tokens per second the profile measured at each swept concurrency (at most 64 points per profile, evenly thinned).", []string{"profile", "concurrency"}}
	MetricProfileCurveTTFT = MetricDesc{"kneewatch_profile_curve_ttft_p99_seconds", Gauge,
		"99th percentile of time to first token the profile measured at each swept concurrency (a gauge: promtool allows a quantile label only on summaries, and a profile holds p50 and p99 only).", []string{"profile", "concurrency"}}
	MetricProfileCurveTPOT = MetricDesc{"kneewatch_profile_curve_tpot_p99_seconds", Gauge,
		"99th percentile of time per output token the profile measured at each swept concurrency.", []string{"profile", "concurrency"}}
	MetricSLOTTFT = MetricDesc{"kneewatch_slo_ttft_seconds", Gauge,
		"The TTFT threshold of the replica's SLO, at the SLO's quantile (slo_quantile).", withLabels("slo_quantile")}
	MetricSLOTPOT = MetricDesc{"kneewatch_slo_tpot_seconds", Gauge,
		"The TPOT threshold of the replica's SLO, at the SLO's quantile (slo_quantile).", withLabels("slo_quantile")}
	MetricFleetReplicas = MetricDesc{"kneewatch_fleet_replicas", Gauge,
		"Replicas of the model whose evaluation is ok.", []string{"model"}}
	MetricFleetNeeded = MetricDesc{"kneewatch_fleet_replicas_needed", Gauge,
		"Replicas the model needs on the headroom scale: the sum over its evaluated replicas of (1 - headroom), divided by (1 - target headroom).", []string{"model"}}
	MetricFleetHeadroom = MetricDesc{"kneewatch_fleet_headroom_ratio", Gauge,
		"Fleet headroom of the model: 1 minus total in-flight load divided by total knee concurrency.", []string{"model"}}
	MetricScrapeDuration = MetricDesc{"kneewatch_scrape_duration_seconds", Gauge,
		"Duration of the last scrape of the replica's source.", sourceLabels}
	MetricScrapeProblems = MetricDesc{"kneewatch_target_scrape_problems_total", Counter,
		"Unusable data found in the replica's scrapes since it was added, by source (engine, dcgm) and problem (duplicate_series, non_finite, partial_histogram, non_monotonic_histogram, invalid_histogram, negative_counter, wrong_type, missing, label_too_long, invalid_label, dcgm_sentinel); the signal each fed is absent, not wrong. problem=\"memory_budget\" counts scrapes not made because the scrape memory budget had no room within the scrape timeout.", append(slices.Clone(sourceLabels), "problem")}
	MetricConfigReloadOK = MetricDesc{"kneewatch_config_last_reload_successful", Gauge,
		"1 when the last config reload (SIGHUP or POST /-/reload) applied; 0 when it failed and the previous config is still running.", nil}
	MetricConfigReloadTime = MetricDesc{"kneewatch_config_last_reload_success_timestamp_seconds", Gauge,
		"Unix time of the last successful config load (start or reload).", nil}
	MetricShardOrdinal = MetricDesc{"kneewatch_shard_ordinal", Gauge,
		"This instance's shard (--shard), 0 to kneewatch_shards - 1; it watches only the replicas whose name hashes to it.", nil}
	MetricShardCount = MetricDesc{"kneewatch_shards", Gauge,
		"How many kneewatch instances split the replicas (--total-shards); 1 when not sharded.", nil}
	MetricEvaluations = MetricDesc{"kneewatch_evaluations_total", Counter,
		"Evaluation rounds completed since start.", nil}
	MetricLastEvaluation = MetricDesc{"kneewatch_last_evaluation_timestamp_seconds", Gauge,
		"Unix time of the last completed evaluation round.", nil}
)

// MetricBuildInfo is exported by client_golang's version collector.
var MetricBuildInfo = MetricDesc{"kneewatch_build_info", Gauge,
	"A metric with a constant '1' value labeled by version, revision, branch, goversion, goos and goarch from which kneewatch was built.",
	[]string{"branch", "goarch", "goos", "goversion", "revision", "tags", "version"}}

// Catalog lists every metric family the watcher exports, in README order.
var Catalog = []MetricDesc{
	MetricReplicaHeadroom, MetricReplicaKneeLoad, MetricReplicaInflight, MetricReplicaRunning,
	MetricReplicaWaiting, MetricReplicaOutputTPS, MetricReplicaPromptTPS, MetricReplicaGoodput,
	MetricReplicaAttainment, MetricReplicaRequests, MetricReplicaGoodRequests, MetricReplicaTTFT, MetricReplicaTPOT, MetricReplicaKV,
	MetricReplicaPreemptions, MetricReplicaGPUUtil, MetricReplicaLimiting, MetricReplicaMixDrift,
	MetricReplicaEvalOK, MetricReplicaInfo, MetricTargetUp, MetricScrapeDuration, MetricScrapeProblems,
	MetricKneeConcurrency, MetricKneeOutputTPS, MetricKneeGoodput, MetricKneeKV, MetricKneeKVReference,
	MetricProfileCurveOutputTPS, MetricProfileCurveTTFT, MetricProfileCurveTPOT,
	MetricSLOTTFT, MetricSLOTPOT,
	MetricFleetReplicas, MetricFleetNeeded, MetricFleetHeadroom,
	MetricEvaluations, MetricLastEvaluation, MetricConfigReloadOK, MetricConfigReloadTime,
	MetricShardOrdinal, MetricShardCount, MetricBuildInfo,
}

// Probe metric families, exported by the probe package.
var (
	MetricProbeTTFT = MetricDesc{"kneewatch_probe_ttft_seconds", Histogram,
		"Client-side time to first token of synthetic probes (bucket edges include the SLO threshold).", probeLabels}
	MetricProbeTPOT = MetricDesc{"kneewatch_probe_tpot_seconds", Histogram,
		"Client-side time per output token of synthetic probes (bucket edges include the SLO threshold).", probeLabels}
	MetricProbeSuccess = MetricDesc{"kneewatch_probe_success_total", Counter,
		"Probes that streamed the expected tokens.", probeLabels}
	MetricProbeFailures = MetricDesc{"kneewatch_probe_failures_total", Counter,
		"Failed probes by class (connect, timeout, http_4xx, http_5xx, bad_stream, empty, redirect).", withProbeLabels("class")}
	MetricProbeSkipped = MetricDesc{"kneewatch_probe_skipped_total", Counter,
		"Probes not sent, by reason (past_knee, queue_growing, budget, in_flight).", withProbeLabels("reason")}
	MetricProbeLast = MetricDesc{"kneewatch_probe_last_timestamp_seconds", Gauge,
		"Unix time the last probe finished.", probeLabels}
	MetricProbeLoad = MetricDesc{"kneewatch_probe_load_ratio", Gauge,
		"Probe output tokens per second divided by the replica's knee output tokens per second (kept under probes.load_ratio_cap, default 0.001).", probeLabels}
	MetricProbeAttainment = MetricDesc{"kneewatch_probe_slo_attainment_ratio", Gauge,
		"Share of probes over the window within the SLO threshold, per SLO (ttft, tpot).", withProbeLabels("slo")}
)

// ProbeCatalog lists the probe metric families.
var ProbeCatalog = []MetricDesc{
	MetricProbeTTFT, MetricProbeTPOT, MetricProbeSuccess, MetricProbeFailures,
	MetricProbeSkipped, MetricProbeLast, MetricProbeLoad, MetricProbeAttainment,
}

// Kubernetes discovery's metric families, exported by the discovery
// package when the config has a kubernetes section.
var (
	MetricDiscoveryPods = MetricDesc{"kneewatch_discovery_pods", Gauge,
		"Pods matching the discovery selector, by state: ready (evaluated as replicas), unready (Running but not Ready, so not evaluated nor counted in the fleet), pending, terminating, finished.", []string{"state"}}
	MetricDiscoverySynced = MetricDesc{"kneewatch_discovery_synced", Gauge,
		"1 when every informer of the role (serving, dcgm_exporter) has listed its pods and its last list or watch call to the API server succeeded; 0 before the first list, during an API outage or without permission.", []string{"role"}}
	MetricDiscoveryLastSync = MetricDesc{"kneewatch_discovery_last_sync_timestamp_seconds", Gauge,
		"Unix time of the role's last successful list or watch call to the API server, or of its last watch event; absent before the first.", []string{"role"}}
	MetricDiscoveryErrors = MetricDesc{"kneewatch_discovery_errors_total", Counter,
		"Failed list and watch calls to the API server by role and kind (forbidden, unauthorized, unavailable, other); an unanswered call is retried within seconds, and each retry counts.", []string{"role", "kind"}}
)

// DiscoveryCatalog lists the discovery metric families.
var DiscoveryCatalog = []MetricDesc{
	MetricDiscoveryPods, MetricDiscoverySynced, MetricDiscoveryLastSync, MetricDiscoveryErrors,
}

// All lists every metric family kneewatch exports.
func All() []MetricDesc {
	return slices.Concat(Catalog, ProbeCatalog, DiscoveryCatalog)
}

// Lookup returns the family with the given name (a histogram also answers to
// its _bucket, _sum and _count series names, a summary to _sum and _count).
func Lookup(name string) (MetricDesc, bool) {
	for _, d := range All() {
		if d.Name == name {
			return d, true
		}
		var suffixes []string
		switch d.Type {
		case Histogram:
			suffixes = []string{"_bucket", "_sum", "_count"}
		case Summary:
			suffixes = []string{"_sum", "_count"}
		}
		for _, s := range suffixes {
			if name == d.Name+s {
				return d, true
			}
		}
	}
	return MetricDesc{}, false
}
