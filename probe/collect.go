package probe

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kneewatch/kneewatch/catalog"
)

// descs are the probe metric families, from the catalog.
var (
	descTTFT       = catalog.MetricProbeTTFT.Desc()
	descTPOT       = catalog.MetricProbeTPOT.Desc()
	descSuccess    = catalog.MetricProbeSuccess.Desc()
	descFailures   = catalog.MetricProbeFailures.Desc()
	descSkipped    = catalog.MetricProbeSkipped.Desc()
	descLast       = catalog.MetricProbeLast.Desc()
	descLoad       = catalog.MetricProbeLoad.Desc()
	descAttainment = catalog.MetricProbeAttainment.Desc()
)

// Describe implements prometheus.Collector. It yields nothing, so the
// runner is an unchecked collector: a target's extra labels add label names
// that vary by target and change on reload.
func (r *Runner) Describe(chan<- *prometheus.Desc) {}

// descSet is the probe families' descriptors for one set of extra labels.
type descSet struct {
	ttft, tpot, success, failures, skipped, last, load, attainment *prometheus.Desc
}

var plainDescs = descSet{descTTFT, descTPOT, descSuccess, descFailures, descSkipped, descLast, descLoad, descAttainment}

// descsWith builds the descriptors with extra label names after each
// family's own; none gives the shared ones.
func descsWith(extra []string) descSet {
	if len(extra) == 0 {
		return plainDescs
	}
	return descSet{
		catalog.MetricProbeTTFT.DescWith(extra), catalog.MetricProbeTPOT.DescWith(extra),
		catalog.MetricProbeSuccess.DescWith(extra), catalog.MetricProbeFailures.DescWith(extra),
		catalog.MetricProbeSkipped.DescWith(extra), catalog.MetricProbeLast.DescWith(extra),
		catalog.MetricProbeLoad.DescWith(extra), catalog.MetricProbeAttainment.DescWith(extra),
	}
}

// Collect implements prometheus.Collector: const metrics from each
// replica's counters, histograms and window, read under its lock. Every
// failure class and skip reason is exported from the start (at 0), so
// rate() sees the first failure.
func (r *Runner) Collect(ch chan<- prometheus.Metric) {
	now := r.opts.Now()
	p := r.opts.Probes
	state := r.stateFunc()
	for _, s := range r.sortedReplicas() {
		if !s.resolveModel(state) {
			continue // no model label yet: export nothing rather than model=""
		}
		s.collect(ch, now, p.MaxTokens, p.LoadRatioCap, r.window)
	}
}

// stateFunc is the watcher's state while Run runs, else nil.
func (r *Runner) stateFunc() StateFunc {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.run == nil {
		return nil
	}
	return r.run.state
}

// resolveModel settles the model label from the watcher when it is not yet
// settled, and reports whether it is.
func (s *replicaState) resolveModel(state StateFunc) bool {
	s.mu.Lock()
	known := s.modelKnown
	s.mu.Unlock()
	if known || state == nil {
		return known
	}
	st, ok := state(s.name)
	if !ok {
		return false
	}
	s.setModel(st.Model)
	return true
}

func (s *replicaState) collect(ch chan<- prometheus.Metric, now time.Time, maxTokens int, loadCap float64, window time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Label values in catalog order (replica, model, namespace, pod, then
	// the family's own), then the target's extra labels by name.
	names := slices.Sorted(maps.Keys(s.target.Labels))
	var extra []string
	for _, n := range names {
		extra = append(extra, s.target.Labels[n])
	}
	d := descsWith(names)
	id := []string{s.name, s.model, s.target.Namespace, s.target.Pod}
	labels := slices.Concat(id, extra)
	with := func(own string) []string { return slices.Concat(id, []string{own}, extra) }
	for _, h := range []struct {
		desc *prometheus.Desc
		h    *histogram
	}{{d.ttft, s.ttft}, {d.tpot, s.tpot}} {
		if m, err := h.h.metric(h.desc, labels...); err == nil {
			ch <- m
		} else {
			ch <- prometheus.NewInvalidMetric(h.desc, err)
		}
	}
	ch <- prometheus.MustNewConstMetric(d.success, prometheus.CounterValue, float64(s.success), labels...)
	for _, c := range Classes {
		ch <- prometheus.MustNewConstMetric(d.failures, prometheus.CounterValue, float64(s.failures[c]), with(string(c))...)
	}
	for _, reason := range Reasons {
		ch <- prometheus.MustNewConstMetric(d.skipped, prometheus.CounterValue, float64(s.skipped[reason]), with(string(reason))...)
	}
	if !s.last.IsZero() {
		ch <- prometheus.MustNewConstMetric(d.last, prometheus.GaugeValue, float64(s.last.UnixNano())/1e9, labels...)
	}
	if ratio, ok := s.loadRatioLocked(now, maxTokens, loadCap, window); ok {
		ch <- prometheus.MustNewConstMetric(d.load, prometheus.GaugeValue, ratio, labels...)
	}
	sum := s.summaryLocked(now, window)
	for _, a := range []struct {
		slo string
		v   float64
	}{{"ttft", sum.TTFTAttainment}, {"tpot", sum.TPOTAttainment}} {
		if !math.IsNaN(a.v) {
			ch <- prometheus.MustNewConstMetric(d.attainment, prometheus.GaugeValue, a.v, with(a.slo)...)
		}
	}
}
