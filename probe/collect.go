package probe

import (
	"math"
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

// Describe implements prometheus.Collector.
func (r *Runner) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTTFT, descTPOT, descSuccess, descFailures, descSkipped, descLast, descLoad, descAttainment} {
		ch <- d
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
	labels := []string{s.name, s.model}
	with := func(extra string) []string { return append(append([]string{}, labels...), extra) }
	for _, h := range []struct {
		desc *prometheus.Desc
		h    *histogram
	}{{descTTFT, s.ttft}, {descTPOT, s.tpot}} {
		if m, err := h.h.metric(h.desc, labels...); err == nil {
			ch <- m
		} else {
			ch <- prometheus.NewInvalidMetric(h.desc, err)
		}
	}
	ch <- prometheus.MustNewConstMetric(descSuccess, prometheus.CounterValue, float64(s.success), labels...)
	for _, c := range Classes {
		ch <- prometheus.MustNewConstMetric(descFailures, prometheus.CounterValue, float64(s.failures[c]), with(string(c))...)
	}
	for _, reason := range Reasons {
		ch <- prometheus.MustNewConstMetric(descSkipped, prometheus.CounterValue, float64(s.skipped[reason]), with(string(reason))...)
	}
	if !s.last.IsZero() {
		ch <- prometheus.MustNewConstMetric(descLast, prometheus.GaugeValue, float64(s.last.UnixNano())/1e9, labels...)
	}
	if ratio, ok := s.loadRatioLocked(now, maxTokens, loadCap, window); ok {
		ch <- prometheus.MustNewConstMetric(descLoad, prometheus.GaugeValue, ratio, labels...)
	}
	sum := s.summaryLocked(now, window)
	for _, a := range []struct {
		slo string
		v   float64
	}{{"ttft", sum.TTFTAttainment}, {"tpot", sum.TPOTAttainment}} {
		if !math.IsNaN(a.v) {
			ch <- prometheus.MustNewConstMetric(descAttainment, prometheus.GaugeValue, a.v, with(a.slo)...)
		}
	}
}
