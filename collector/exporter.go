package collector

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/knee"
)

// Exporter is a prometheus.Collector that turns the watcher's latest round
// into const metrics. It holds no state of its own: every scrape reads one
// immutable Round, so a scrape never sees half an evaluation.
type Exporter struct {
	latest func() *Round
	descs  map[string]*prometheus.Desc
}

// exported lists the catalog families this exporter emits.
var exported = []catalog.MetricDesc{
	catalog.MetricReplicaHeadroom, catalog.MetricReplicaKneeLoad, catalog.MetricReplicaInflight,
	catalog.MetricReplicaRunning, catalog.MetricReplicaWaiting, catalog.MetricReplicaOutputTPS,
	catalog.MetricReplicaPromptTPS, catalog.MetricReplicaGoodput, catalog.MetricReplicaAttainment,
	catalog.MetricReplicaRequests, catalog.MetricReplicaGoodRequests,
	catalog.MetricReplicaTTFT, catalog.MetricReplicaTPOT, catalog.MetricReplicaKV,
	catalog.MetricReplicaPreemptions, catalog.MetricReplicaGPUUtil, catalog.MetricReplicaLimiting,
	catalog.MetricReplicaMixDrift, catalog.MetricReplicaEvalOK, catalog.MetricReplicaInfo, catalog.MetricTargetUp,
	catalog.MetricScrapeDuration, catalog.MetricScrapeProblems, catalog.MetricKneeConcurrency, catalog.MetricKneeOutputTPS,
	catalog.MetricKneeGoodput, catalog.MetricKneeKV, catalog.MetricSLOTTFT, catalog.MetricSLOTPOT,
	catalog.MetricFleetReplicas, catalog.MetricFleetNeeded, catalog.MetricFleetHeadroom,
	catalog.MetricEvaluations, catalog.MetricLastEvaluation,
}

// NewExporter exports the rounds latest returns (usually Watcher.Latest).
func NewExporter(latest func() *Round) *Exporter {
	e := &Exporter{latest: latest, descs: map[string]*prometheus.Desc{}}
	for _, d := range exported {
		e.descs[d.Name] = d.Desc()
	}
	return e
}

// Describe implements prometheus.Collector.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range e.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	r := e.latest()
	if r == nil {
		return
	}
	emit := func(m catalog.MetricDesc, v float64, labels ...string) {
		if !knee.Known(v) {
			return // unknown is absent, never a made-up number
		}
		vt := prometheus.GaugeValue
		if m.Type == catalog.Counter {
			vt = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(e.descs[m.Name], vt, v, labels...)
	}
	for i := range r.Replicas {
		e.collectReplica(ch, &r.Replicas[i], emit)
	}
	for model, f := range r.Fleet {
		emit(catalog.MetricFleetReplicas, float64(f.Available), model)
		emit(catalog.MetricFleetNeeded, f.ReplicasNeeded, model)
		emit(catalog.MetricFleetHeadroom, f.Headroom, model)
	}
	emit(catalog.MetricEvaluations, float64(r.Evaluations))
	emit(catalog.MetricLastEvaluation, float64(r.At.UnixNano())/1e9)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// summary exports windowed quantiles as a summary, as client_golang's own
// Summary does (quantiles over a sliding window, count and sum cumulative);
// an unknown quantile is left out.
func (e *Exporter) summary(ch chan<- prometheus.Metric, m catalog.MetricDesc, q knee.LatencyQuantiles, count, sum float64, labels []string) {
	quantiles := map[float64]float64{}
	for phi, v := range map[float64]float64{0.5: q.P50, 0.9: q.P90, 0.99: q.P99} {
		if knee.Known(v) {
			quantiles[phi] = v
		}
	}
	if len(quantiles) == 0 && count == 0 {
		return
	}
	ch <- prometheus.MustNewConstSummary(e.descs[m.Name], uint64(count), sum, quantiles, labels...)
}

func (e *Exporter) collectReplica(ch chan<- prometheus.Metric, re *ReplicaEval, emit func(catalog.MetricDesc, float64, ...string)) {
	emit(catalog.MetricTargetUp, boolValue(re.EngineUp), re.Replica, "engine")
	emit(catalog.MetricScrapeDuration, re.EngineDuration.Seconds(), re.Replica, "engine")
	if re.DCGMConfigured && !re.DCGMPending {
		emit(catalog.MetricTargetUp, boolValue(re.DCGMUp), re.Replica, "dcgm")
		emit(catalog.MetricScrapeDuration, re.DCGMDuration.Seconds(), re.Replica, "dcgm")
	}
	for k, n := range re.Problems {
		emit(catalog.MetricScrapeProblems, n, re.Replica, k.Source, k.Kind)
	}

	l := []string{re.Replica, re.Model, re.Profile}
	with := func(extra string) []string { return append(append([]string{}, l...), extra) }
	res := &re.Result
	emit(catalog.MetricReplicaEvalOK, boolValue(res.OK), with(res.Reason)...)
	if re.Engine != "" {
		emit(catalog.MetricReplicaInfo, 1, with(re.Engine)...)
	}

	if re.SLO != nil {
		q := strconv.FormatFloat(re.SLO.Quantile, 'g', -1, 64)
		emit(catalog.MetricSLOTTFT, re.SLO.TTFT.Seconds(), with(q)...)
		emit(catalog.MetricSLOTPOT, re.SLO.TPOT.Seconds(), with(q)...)
	}
	if k := re.Knee; k != nil {
		emit(catalog.MetricKneeConcurrency, k.Concurrency, l...)
		emit(catalog.MetricKneeOutputTPS, k.OutputTokensPerSecond, l...)
		emit(catalog.MetricKneeGoodput, k.GoodputTokensPerSecond, l...)
		emit(catalog.MetricKneeKV, k.KVCacheUsage, l...)
	}
	if re.HasCounters {
		emit(catalog.MetricReplicaRequests, re.RequestsTotal, l...)
		emit(catalog.MetricReplicaGoodRequests, re.GoodTTFTRequests, with("ttft")...)
		emit(catalog.MetricReplicaGoodRequests, re.GoodTPOTRequests, with("tpot")...)
	}

	// What was observed is exported even when the evaluation is not ok
	// (no profile yet): the raw operating point is still true.
	o := &re.Observation
	emit(catalog.MetricReplicaInflight, o.Load(), l...)
	emit(catalog.MetricReplicaRunning, o.Running, l...)
	emit(catalog.MetricReplicaWaiting, o.Waiting, l...)
	emit(catalog.MetricReplicaOutputTPS, o.OutputTokensPerSecond, l...)
	emit(catalog.MetricReplicaPromptTPS, o.PromptTokensPerSecond, l...)
	emit(catalog.MetricReplicaKV, o.KVCacheUsage, l...)
	emit(catalog.MetricReplicaPreemptions, o.PreemptionsPerSecond, l...)
	emit(catalog.MetricReplicaGPUUtil, o.GPUUtilization, l...)
	emit(catalog.MetricReplicaAttainment, o.TTFTAttainment, with("ttft")...)
	emit(catalog.MetricReplicaAttainment, o.TPOTAttainment, with("tpot")...)
	var ttftCount, ttftSum, tpotCount, tpotSum float64
	if re.HasCounters {
		ttftCount, ttftSum, tpotCount, tpotSum = re.RequestsTotal, re.TTFTSum, re.TPOTCount, re.TPOTSum
	}
	e.summary(ch, catalog.MetricReplicaTTFT, o.TTFT, ttftCount, ttftSum, l)
	e.summary(ch, catalog.MetricReplicaTPOT, o.TPOT, tpotCount, tpotSum, l)

	if !res.OK {
		return
	}
	emit(catalog.MetricReplicaHeadroom, res.Headroom, l...)
	for d := range knee.NumDimensions {
		emit(catalog.MetricReplicaKneeLoad, res.Ratios[d], with(d.String())...)
	}
	emit(catalog.MetricReplicaGoodput, res.GoodputTokensPerSecond, l...)
	emit(catalog.MetricReplicaMixDrift, res.MixDrift, l...)
	for _, r := range []knee.Resource{knee.ResourceCompute, knee.ResourceKVCache} {
		emit(catalog.MetricReplicaLimiting, boolValue(res.LimitingResource == r), with(string(r))...)
	}
}
