package collector

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	dto "github.com/prometheus/client_model/go"
)

// metricSpec declares where one signal comes from in an engine's exposition.
type metricSpec struct {
	signal Signal
	// names are the exposed family names, in order of preference (newest
	// engine version first). Counter names are also tried with _total.
	names []string
	// matchLabel/matchValue, when set, keep only series carrying that label
	// value (e.g. finished_reason="abort", request_type="waiting").
	matchLabel, matchValue string
	// scale converts to the signal's base unit (0 means 1).
	scale float64
	// mean averages the series instead of summing them: data-parallel
	// engines each report their own ratio, and the engine's own logger
	// averages them.
	mean bool
	// histogramSum reads a histogram's _sum as a counter (TGI has no token
	// counters, only token-length histograms).
	histogramSum bool
	// histogramCount reads a histogram's _count as a counter: how many
	// requests a per-request histogram observed.
	histogramCount bool
	// required signals produce a Problem when absent: without them the
	// replica's load cannot be read.
	required bool
	// whenAbsent, for an optional family the engine exports only when
	// configured to, says how to turn it on (see AbsentHint).
	whenAbsent string
}

// specAdapter is an engine adapter driven by a table of metricSpecs. The
// engine files declare one each.
type specAdapter struct {
	name string
	// prefixes identify the engine's families (canonical form).
	prefixes []string
	// modelLabel is the label naming the served model ("" if none).
	modelLabel string
	// modelFrom lists the families whose model labels decide which models a
	// scrape carries (default: every family in metrics). Triton exposes
	// generic nv_inference_* series for every model in its repository, so
	// only its TensorRT-LLM families say which model is the LLM.
	modelFrom []string
	// rankLabels name labels whose values mark duplicate reporters of the
	// same batch (tensor-parallel ranks); only the lowest value is read.
	rankLabels []string
	metrics    []metricSpec
	// extra reads what does not fit a metricSpec (info-style labels,
	// derived sums); it runs after the table.
	extra func(fi familyIndex, sel selector, s *Snapshot)
	// extraFamilies names the families extra reads, so the stream parser
	// keeps them.
	extraFamilies []string
}

func (a specAdapter) detect(fi familyIndex) bool { return fi.hasPrefix(a.prefixes...) }

func (a specAdapter) normalize(fi familyIndex, opts Options) (Snapshot, error) {
	s := NewSnapshot(a.name)
	model, err := a.chooseModel(fi, opts.Model)
	if err != nil {
		return Snapshot{}, err
	}
	s.Model = model
	sel := selector{modelLabel: a.modelLabel, model: model, rankLabels: a.rankLabels}
	names := a.canonical()
	for i, spec := range a.metrics {
		if _, done := s.Histograms[spec.signal]; done {
			continue
		}
		if spec.signal.Kind() != KindHistogram {
			if _, done := s.Gauges[spec.signal]; done {
				continue
			}
			if _, done := s.Counters[spec.signal]; done {
				continue
			}
		}
		var mf *dto.MetricFamily
		for _, c := range names.specs[i] {
			if mf = fi.findCanonical(spec.signal.Kind() == KindCounter && !spec.histogramSum && !spec.histogramCount, c); mf != nil {
				break
			}
		}
		if mf == nil {
			if spec.required {
				s.problemOf(ProblemMissing, spec.signal, spec.names[0], "not in scrape; %s is unknown", spec.signal)
			}
			continue
		}
		readSpec(fi, mf, spec, sel, &s)
	}
	if a.extra != nil {
		a.extra(fi, sel, &s)
	}
	keepWholeMixTotals(&s)
	if model == "" && opts.Model != "" {
		s.Model = opts.Model
	}
	return s, nil
}

// chooseModel returns the model to read: the configured one (which must be
// present if the scrape names models at all), else the only one.
func (a specAdapter) chooseModel(fi familyIndex, want string) (string, error) {
	if a.modelLabel == "" {
		return "", nil
	}
	// Nearly every scrape names one model: the set is only built once a
	// second name appears (this runs on every scrape).
	var first string
	var seen map[string]bool
	add := func(v string) {
		switch {
		case first == "" || v == first:
			first = v
		default:
			if seen == nil {
				seen = map[string]bool{first: true}
			}
			seen[v] = true
		}
	}
	for _, c := range a.canonical().model {
		for _, m := range fi.findCanonical(true, c).GetMetric() {
			if v, ok := labelValue(m, a.modelLabel); ok && v != "" {
				add(v)
			}
		}
	}
	if seen == nil && first != "" {
		seen = map[string]bool{first: true}
		if want == "" || want == first {
			return first, nil
		}
	}
	models := slices.Sorted(func(yield func(string) bool) {
		for k := range seen {
			if !yield(k) {
				return
			}
		}
	})
	switch {
	case want != "":
		if len(models) > 0 && !seen[want] {
			return "", fmt.Errorf("model %q is not in the scrape (%s values: %s)", want, a.modelLabel, strings.Join(models, ", "))
		}
		return want, nil
	case len(models) > 1:
		return "", fmt.Errorf("scrape carries several models (%s values: %s); set the target's model", a.modelLabel, strings.Join(models, ", "))
	case len(models) == 1:
		return models[0], nil
	}
	return "", nil
}

// adapterNames are an adapter's names in canonical form (each with its
// _total form): per spec of its table, and those that decide the model.
type adapterNames struct {
	specs [][][2]string
	model [][2]string
}

// canonical returns the adapter's names in canonical form, built once per
// adapter: they are looked up on every scrape.
func (a specAdapter) canonical() *adapterNames {
	if v, ok := adapterCanonical.Load(a.name); ok {
		return v.(*adapterNames)
	}
	n := &adapterNames{}
	var all []string
	for _, spec := range a.metrics {
		n.specs = append(n.specs, canonicalPairs(spec.names))
		all = append(all, spec.names...)
	}
	if a.modelFrom != nil {
		all = a.modelFrom
	}
	n.model = canonicalPairs(all)
	adapterCanonical.Store(a.name, n)
	return n
}

var adapterCanonical sync.Map

// selector picks the series of one replica's model out of a family.
type selector struct {
	modelLabel, model string
	rankLabels        []string
}

// series returns the family's series for the selected model that carry
// label=value (when label is set), keeping only the lowest rank of each
// rank label.
func (sel selector) series(mf *dto.MetricFamily, label, value string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range mf.GetMetric() {
		if sel.modelLabel != "" && sel.model != "" {
			if v, ok := labelValue(m, sel.modelLabel); ok && v != sel.model {
				continue
			}
		}
		if label != "" {
			if v, _ := labelValue(m, label); v != value {
				continue
			}
		}
		out = append(out, m)
	}
	for _, rl := range sel.rankLabels {
		out = keepLowestRank(out, rl)
	}
	return out
}

// keepLowestRank keeps the series whose rank label has the lowest value
// (numerically when the values are numbers); series without the label stay.
func keepLowestRank(ms []*dto.Metric, label string) []*dto.Metric {
	lowest, have := "", false
	for _, m := range ms {
		v, ok := labelValue(m, label)
		if ok && (!have || rankLess(v, lowest)) {
			lowest, have = v, true
		}
	}
	if !have {
		return ms
	}
	out := ms[:0:0]
	for _, m := range ms {
		if v, ok := labelValue(m, label); !ok || v == lowest {
			out = append(out, m)
		}
	}
	return out
}

func rankLess(a, b string) bool {
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	if errA == nil && errB == nil {
		return x < y
	}
	return a < b
}

// readSpec reads one signal from its family into s, or records why not.
func readSpec(fi familyIndex, mf *dto.MetricFamily, spec metricSpec, sel selector, s *Snapshot) {
	name := mf.GetName()
	if key, dup := duplicateSeries(mf); dup {
		s.problemOf(ProblemDuplicateSeries, spec.signal, name, "series {%s} appears more than once; %s is unknown", CapLabel(key), spec.signal)
		return
	}
	ms := sel.series(mf, spec.matchLabel, spec.matchValue)
	if len(ms) == 0 {
		return
	}
	scale := spec.scale
	if scale == 0 {
		scale = 1
	}
	t := mf.GetType()
	switch {
	case spec.signal.Kind() == KindHistogram:
		if t != dto.MetricType_HISTOGRAM && t != dto.MetricType_GAUGE_HISTOGRAM {
			s.problemOf(ProblemWrongType, spec.signal, name, "is a %s, expected a histogram", strings.ToLower(t.String()))
			return
		}
		var total Histogram
		for i, m := range ms {
			if v := m.GetHistogram().GetSampleSum(); math.IsNaN(v) || math.IsInf(v, 0) {
				// Not fatal: the buckets still serve quantiles and
				// attainment; only the mean and the exported _sum skip it.
				s.problemOf(ProblemNonFinite, SignalUnknown, name, "_sum is %v; the mean of %s is unknown this scrape", v, spec.signal)
			}
			h, err := fi.histogram(m.GetHistogram())
			if err != nil {
				s.problemOf(histogramProblemKind(err), spec.signal, name, "%v; %s is unknown", err, spec.signal)
				return
			}
			if i == 0 {
				total = h
				continue
			}
			if total, err = addHistogram(total, h); err != nil {
				s.problemOf(ProblemInvalidHisto, spec.signal, name, "%v; %s is unknown", err, spec.signal)
				return
			}
		}
		// Series of finite counts can sum (or scale) past the largest
		// float: an infinite count is no count.
		if b, ok := nonFiniteBucket(total, scale); ok {
			s.problemOf(ProblemNonFinite, spec.signal, name, "bucket le=%q sums to %v over its %d series; %s is unknown", formatBound(b.UpperBound), b.Count*scale, len(ms), spec.signal)
			return
		}
		switch {
		case scale != 1:
			total = scaleHistogram(total, scale)
		case len(ms) == 1 && fi.borrowed:
			// One series' buckets, still the stream parser's.
			total.Buckets = slices.Clone(total.Buckets)
		}
		s.Histograms[spec.signal] = total
	default:
		var sum float64
		for _, m := range ms {
			var v float64
			switch {
			case spec.histogramCount:
				h := m.GetHistogram()
				if t != dto.MetricType_HISTOGRAM || h == nil || h.SampleCount == nil {
					s.problemOf(ProblemWrongType, spec.signal, name, "has no _count to read %s from", spec.signal)
					return
				}
				v = float64(h.GetSampleCount())
			case spec.histogramSum:
				// Either message may be absent (nil) whatever the family's
				// type says: a histogram exposed without its _sum line has no
				// summary, and reading through the nil one crashed the watcher.
				hasSum := (m.GetHistogram() != nil && m.GetHistogram().SampleSum != nil) ||
					(m.GetSummary() != nil && m.GetSummary().SampleSum != nil)
				if (t != dto.MetricType_HISTOGRAM && t != dto.MetricType_SUMMARY) || !hasSum {
					s.problemOf(ProblemWrongType, spec.signal, name, "has no _sum to read %s from", spec.signal)
					return
				}
				v = m.GetHistogram().GetSampleSum() + m.GetSummary().GetSampleSum()
			default:
				var ok bool
				if v, ok = scalarValue(t, m); !ok {
					s.problemOf(ProblemWrongType, spec.signal, name, "is a %s, expected a %s", strings.ToLower(t.String()), kindWord(spec.signal.Kind()))
					return
				}
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				s.problemOf(ProblemNonFinite, spec.signal, name, "has value %v; %s is unknown", v, spec.signal)
				return
			}
			if spec.signal.Kind() == KindCounter && v < 0 {
				s.problemOf(ProblemNegativeCounter, spec.signal, name, "counter has negative value %v; %s is unknown", v, spec.signal)
				return
			}
			sum += v
		}
		if spec.mean {
			sum /= float64(len(ms))
		}
		if v := sum * scale; math.IsNaN(v) || math.IsInf(v, 0) {
			s.problemOf(ProblemNonFinite, spec.signal, name, "sums to %v over its %d series; %s is unknown", v, len(ms), spec.signal)
			return
		}
		s.set(spec.signal, sum*scale)
	}
}

// nonFiniteBucket is the first of h's buckets whose count × scale is not
// finite, and whether there is one.
func nonFiniteBucket(h Histogram, scale float64) (Bucket, bool) {
	for _, b := range h.Buckets {
		if c := b.Count * scale; math.IsNaN(c) || math.IsInf(c, 0) {
			return b, true
		}
	}
	return Bucket{}, false
}

func scaleHistogram(h Histogram, factor float64) Histogram {
	out := Histogram{Buckets: make([]Bucket, len(h.Buckets)), Count: h.Count, Sum: h.Sum * factor}
	for i, b := range h.Buckets {
		out.Buckets[i] = Bucket{UpperBound: b.UpperBound * factor, Count: b.Count}
	}
	return out
}

func kindWord(k SignalKind) string {
	switch k {
	case KindGauge:
		return "gauge"
	case KindCounter:
		return "counter"
	case KindHistogram:
		return "histogram"
	}
	return "metric"
}

// infoNumber reads a positive numeric label of an info-style series (value
// 1, configuration in labels). Values such as "None" are not numbers.
func infoNumber(m *dto.Metric, label string) (float64, bool) {
	v, ok := labelValue(m, label)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil && f > 0 && !math.IsInf(f, 0)
}
