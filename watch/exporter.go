package watch

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/knee"
)

// Exporter is a prometheus.Collector that turns the watcher's latest round
// into const metrics. It holds no state but a descriptor cache: every
// scrape reads one immutable Round, so a scrape never sees half an
// evaluation.
//
// It is an unchecked collector (Describe yields nothing): a replica's series
// carry its target's extra `labels`, whose names vary between targets and
// change on reload, so the label names of a family are not fixed up front.
// Prometheus accepts a family whose series have different label names.
type Exporter struct {
	latest func() *Round
	mu     sync.Mutex
	// descs caches descriptors by extra label names (joined with ",", ""
	// for none), then by metric name.
	descs map[string]map[string]*prometheus.Desc
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
	catalog.MetricKneeGoodput, catalog.MetricKneeKV, catalog.MetricKneeKVReference, catalog.MetricSLOTTFT, catalog.MetricSLOTPOT,
	catalog.MetricProfileCurveOutputTPS, catalog.MetricProfileCurveTTFT, catalog.MetricProfileCurveTPOT,
	catalog.MetricFleetReplicas, catalog.MetricFleetNeeded, catalog.MetricFleetHeadroom,
	catalog.MetricEvaluations, catalog.MetricLastEvaluation,
}

// NewExporter exports the rounds latest returns (usually Watcher.Latest).
func NewExporter(latest func() *Round) *Exporter {
	return &Exporter{latest: latest, descs: map[string]map[string]*prometheus.Desc{}}
}

// Describe implements prometheus.Collector; it yields nothing, which makes
// the exporter unchecked (see Exporter).
func (e *Exporter) Describe(chan<- *prometheus.Desc) {}

// descsFor returns the descriptors of the exported families with the extra
// label names after each family's own, building them on first use. Few
// distinct sets exist (usually one), so the cache stays small; a set no
// longer used after a reload stays cached, which costs a few descriptors.
func (e *Exporter) descsFor(extra []string) map[string]*prometheus.Desc {
	key := strings.Join(extra, ",")
	e.mu.Lock()
	defer e.mu.Unlock()
	if d, ok := e.descs[key]; ok {
		return d
	}
	d := make(map[string]*prometheus.Desc, len(exported))
	for _, m := range exported {
		d[m.Name] = m.DescWith(extra)
	}
	e.descs[key] = d
	return d
}

// Collect implements prometheus.Collector.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	r := e.latest()
	if r == nil {
		return
	}
	plain := e.descsFor(nil)
	emitter := func(descs map[string]*prometheus.Desc, extra []string) emitFunc {
		return func(m catalog.MetricDesc, v float64, labels ...string) {
			if !knee.Known(v) {
				return // unknown is absent, never a made-up number
			}
			vt := prometheus.GaugeValue
			if m.Type == catalog.Counter {
				vt = prometheus.CounterValue
			}
			ch <- prometheus.MustNewConstMetric(descs[m.Name], vt, v, slices.Concat(labels, extra)...)
		}
	}
	emit := emitter(plain, nil)
	for i := range r.Replicas {
		re := &r.Replicas[i]
		names := slices.Sorted(maps.Keys(re.Labels))
		values := make([]string, len(names))
		for j, n := range names {
			values[j] = re.Labels[n]
		}
		descs := e.descsFor(names)
		e.collectReplica(ch, re, descs, values, emitter(descs, values))
	}
	e.collectCurves(&r.Replicas, emit)
	for model, f := range r.Fleet {
		emit(catalog.MetricFleetReplicas, float64(f.Available), model)
		emit(catalog.MetricFleetNeeded, f.ReplicasNeeded, model)
		emit(catalog.MetricFleetHeadroom, f.Headroom, model)
	}
	emit(catalog.MetricEvaluations, float64(r.Evaluations))
	emit(catalog.MetricLastEvaluation, float64(r.At.UnixNano())/1e9)
}

// emitFunc sends one sample of m with the given label values (the
// family's own labels, in catalog order); an unknown value sends nothing.
type emitFunc func(m catalog.MetricDesc, v float64, labels ...string)

// maxCurvePoints bounds the curve series per profile: a sweep's ladder is
// a few dozen points, and a hand-written profile with more is thinned
// evenly rather than growing the exposition without bound.
const maxCurvePoints = 64

// collectCurves exports each profile's curve once, under the profile's
// name, however many replicas use it. A name is a profile (the config
// names each once), so the first replica's curve stands for all.
func (e *Exporter) collectCurves(replicas *[]ReplicaEval, emit func(catalog.MetricDesc, float64, ...string)) {
	done := map[string]bool{}
	for i := range *replicas {
		re := &(*replicas)[i]
		if len(re.Curve) == 0 || done[re.Profile] {
			continue
		}
		done[re.Profile] = true
		for _, p := range thin(re.Curve, maxCurvePoints) {
			c := strconv.FormatFloat(p.Concurrency, 'g', -1, 64)
			emit(catalog.MetricProfileCurveOutputTPS, p.OutputTokensPerSecond, re.Profile, c)
			emit(catalog.MetricProfileCurveTTFT, p.TTFT.P99, re.Profile, c)
			emit(catalog.MetricProfileCurveTPOT, p.TPOT.P99, re.Profile, c)
		}
	}
}

// thin keeps at most n points of ps, evenly spaced, always the first and
// the last. Two points at one concurrency would be one series twice: the
// first is kept.
func thin(ps []knee.Point, n int) []knee.Point {
	var out []knee.Point
	seen := map[float64]bool{}
	add := func(p knee.Point) {
		if !seen[p.Concurrency] {
			seen[p.Concurrency] = true
			out = append(out, p)
		}
	}
	if len(ps) <= n {
		for _, p := range ps {
			add(p)
		}
		return out
	}
	for i := range n {
		add(ps[i*(len(ps)-1)/(n-1)])
	}
	return out
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
func summary(ch chan<- prometheus.Metric, desc *prometheus.Desc, q knee.LatencyQuantiles, count, sum float64, labels []string) {
	quantiles := map[float64]float64{}
	for phi, v := range map[float64]float64{0.5: q.P50, 0.9: q.P90, 0.99: q.P99} {
		if knee.Known(v) {
			quantiles[phi] = v
		}
	}
	if len(quantiles) == 0 && count == 0 {
		return
	}
	ch <- prometheus.MustNewConstSummary(desc, uint64(count), sum, quantiles, labels...)
}

// collectReplica sends the replica's series: descs are the families with
// the replica's extra label names, extra their values, which emit appends.
func (e *Exporter) collectReplica(ch chan<- prometheus.Metric, re *ReplicaEval, descs map[string]*prometheus.Desc, extra []string, emit emitFunc) {
	// In catalog.IdentityLabels order.
	id := func(more ...string) []string { return append([]string{re.Replica, re.Namespace, re.Pod}, more...) }
	// A scrape that got no room in the memory budget was not made: up or
	// down is unknown, so absent (the problems counter says why).
	if !re.EngineUnknown {
		emit(catalog.MetricTargetUp, boolValue(re.EngineUp), id("engine")...)
	}
	emit(catalog.MetricScrapeDuration, re.EngineDuration.Seconds(), id("engine")...)
	if re.DCGMConfigured && !re.DCGMPending {
		if !re.DCGMUnknown {
			emit(catalog.MetricTargetUp, boolValue(re.DCGMUp), id("dcgm")...)
		}
		emit(catalog.MetricScrapeDuration, re.DCGMDuration.Seconds(), id("dcgm")...)
	}
	for k, n := range re.Problems {
		emit(catalog.MetricScrapeProblems, n, id(k.Source, k.Kind)...)
	}

	// In catalog replicaLabels order.
	l := []string{re.Replica, re.Model, re.Profile, re.Namespace, re.Pod}
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
	summary(ch, descs[catalog.MetricReplicaTTFT.Name], o.TTFT, ttftCount, ttftSum, slices.Concat(l, extra))
	summary(ch, descs[catalog.MetricReplicaTPOT.Name], o.TPOT, tpotCount, tpotSum, slices.Concat(l, extra))

	if !res.OK {
		return
	}
	emit(catalog.MetricReplicaHeadroom, res.Headroom, l...)
	emit(catalog.MetricKneeKVReference, res.KVCacheReference, l...)
	for d := range knee.NumDimensions {
		emit(catalog.MetricReplicaKneeLoad, res.Ratios[d], with(d.String())...)
	}
	emit(catalog.MetricReplicaGoodput, res.GoodputTokensPerSecond, l...)
	emit(catalog.MetricReplicaMixDrift, res.MixDrift, l...)
	for _, r := range []knee.Resource{knee.ResourceCompute, knee.ResourceKVCache} {
		emit(catalog.MetricReplicaLimiting, boolValue(res.LimitingResource == r), with(string(r))...)
	}
}
