package collector

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// Options tells Normalize which engine and which model to read.
type Options struct {
	// Engine is an adapter name (see Engines). Empty means detect it from
	// the metric names.
	Engine string
	// Model is the served model to read when a scrape carries several.
	// Empty means the scrape's only model; several models are then an error.
	Model string
}

// adapter turns one engine's metric families into a Snapshot. Each engine
// has one file implementing it; all are listed in adapters.
type adapter interface {
	// detect reports whether the families carry this engine's metrics.
	detect(f familyIndex) bool
	// normalize reads the families into a snapshot (Time is left zero).
	normalize(f familyIndex, opts Options) (Snapshot, error)
}

// adapters lists every engine adapter by its name, the name used in config
// and in Snapshot.Engine. It is kneewatch's one list of engines: Engines,
// Detect's error and the stream parser's wanted families come from it, and
// a test in package watch holds config.KnownEngines to it.
var adapters = adaptersByName(engineAdapters)

// engineAdapters are the adapters in documentation order (the order of
// config.KnownEngines and of Detect's error).
var engineAdapters = []specAdapter{vllmAdapter, sglangAdapter, tgiAdapter, trtllmAdapter}

func adaptersByName(as []specAdapter) map[string]adapter {
	m := make(map[string]adapter, len(as))
	for _, a := range as {
		m[a.name] = a
	}
	return m
}

// Engines returns the adapter names, sorted.
func Engines() []string {
	return slices.Sorted(maps.Keys(adapters))
}

// namePatterns are the engines' metric name prefixes as a scrape spells
// them ("vllm:*", "tgi_*"), in documentation order, for messages: each
// adapter's first metric name cut to its canonical prefix's length, since
// the canonical form spells vLLM's and SGLang's colon as an underscore.
func namePatterns() []string {
	var out []string
	for _, a := range engineAdapters {
		out = append(out, a.metrics[0].names[0][:len(a.prefixes[0])]+"*")
	}
	return out
}

// ErrNoEngine means a scrape carries no metric family of any known engine.
var ErrNoEngine = errors.New("no known engine metrics")

// Detect returns the name of the engine whose metrics the families carry.
func Detect(families map[string]*dto.MetricFamily) (string, error) {
	return detect(indexFamilies(families))
}

func detect(fi familyIndex) (string, error) {
	var found []string
	for _, name := range Engines() {
		if adapters[name].detect(fi) {
			found = append(found, name)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%w (looked for %s names)", ErrNoEngine, strings.Join(namePatterns(), ", "))
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("scrape carries metrics of several engines (%s); set the target's engine", strings.Join(found, ", "))
}

// Normalize turns a parsed scrape into a Snapshot with the adapter named by
// opts.Engine, or the detected one. Snapshot.Time is left for the caller.
func Normalize(families map[string]*dto.MetricFamily, opts Options) (Snapshot, error) {
	return normalizeIndex(indexFamilies(families), opts)
}

func normalizeIndex(fi familyIndex, opts Options) (Snapshot, error) {
	name := opts.Engine
	if name == "" {
		var err error
		if name, err = detect(fi); err != nil {
			return Snapshot{}, err
		}
	}
	a, ok := adapters[name]
	if !ok {
		return Snapshot{}, fmt.Errorf("unknown engine %q (known: %s)", name, strings.Join(Engines(), ", "))
	}
	return a.normalize(fi, opts)
}

// familyIndex holds a scrape's families by canonical name: colons replaced
// by underscores, so "vllm:num_requests_running" and the
// "vllm_num_requests_running" some remote-write pipelines produce are one
// name. _created series (prometheus_client's creation timestamps) are
// dropped: they are not data.
type familyIndex struct {
	byName map[string]*dto.MetricFamily
	// skipped lists the watched prefixes (see watchedPrefixes) of families
	// the stream parser saw in the scrape but did not keep, so detection
	// reads the same with or without them.
	skipped []string
	// buckets holds the buckets of the stream parser's histograms, which
	// it keeps apart from their client_model messages.
	buckets map[*dto.Histogram][]Bucket
	// borrowed says the buckets' memory goes back to the stream parser
	// after the scrape: a snapshot keeps a copy.
	borrowed bool
}

// histogram converts a histogram series of the index's families.
func (fi familyIndex) histogram(h *dto.Histogram) (Histogram, error) {
	if b, ok := fi.buckets[h]; ok {
		return histogramFromBuckets(b, h)
	}
	return histogramFromDTO(h)
}

func canonicalName(name string) string { return strings.ReplaceAll(name, ":", "_") }

func indexFamilies(families map[string]*dto.MetricFamily) familyIndex {
	fi := familyIndex{byName: make(map[string]*dto.MetricFamily, len(families))}
	for name, mf := range families {
		if strings.HasSuffix(name, "_created") {
			continue
		}
		key := canonicalName(name)
		// If both spellings are present, keep the engine's own (with colons).
		if prev, ok := fi.byName[key]; ok && strings.Contains(prev.GetName(), ":") {
			continue
		}
		fi.byName[key] = mf
	}
	return fi
}

// hasPrefix reports whether any family's canonical name starts with one of
// prefixes (given in canonical form).
func (fi familyIndex) hasPrefix(prefixes ...string) bool {
	for _, p := range prefixes {
		if slices.Contains(fi.skipped, p) {
			return true
		}
	}
	for name := range fi.byName {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
	}
	return false
}

// find returns the first family present among names. For counters every
// name is also tried with "_total" appended, first, because exposition
// libraries differ in whether they add it.
func (fi familyIndex) find(counter bool, names ...string) *dto.MetricFamily {
	for _, n := range names {
		c, ok := canonicalNames[n]
		if !ok {
			c = [2]string{canonicalName(n), canonicalName(n) + "_total"}
		}
		if mf := fi.findCanonical(counter, c); mf != nil {
			return mf
		}
	}
	return nil
}

// findCanonical is find for one name given as its canonical form and that
// form with _total.
func (fi familyIndex) findCanonical(counter bool, c [2]string) *dto.MetricFamily {
	if counter && !strings.HasSuffix(c[0], "_total") {
		if mf, ok := fi.byName[c[1]]; ok {
			return mf
		}
	}
	return fi.byName[c[0]]
}

// canonicalPairs is canonicalNames' entries for names, in order.
func canonicalPairs(names []string) [][2]string {
	out := make([][2]string, len(names))
	for i, n := range names {
		out[i] = [2]string{canonicalName(n), canonicalName(n) + "_total"}
	}
	return out
}

// canonicalNames holds every name the adapters look up, canonical and
// canonical with _total, built once rather than on each lookup of every
// scrape.
// (Filled by init: the adapter tables refer back to find.)
var canonicalNames map[string][2]string

func init() {
	canonicalNames = map[string][2]string{}
	for _, n := range engineFamilyNames() {
		canonicalNames[n] = [2]string{canonicalName(n), canonicalName(n) + "_total"}
	}
}

func labelValue(m *dto.Metric, name string) (string, bool) {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue(), true
		}
	}
	return "", false
}

// scalarValue returns the value of a gauge, counter or untyped sample.
func scalarValue(t dto.MetricType, m *dto.Metric) (float64, bool) {
	switch t {
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue(), m.Gauge != nil
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue(), m.Counter != nil
	case dto.MetricType_UNTYPED:
		return m.GetUntyped().GetValue(), m.Untyped != nil
	}
	return 0, false
}

// AbsentHint says how to make engine export the family behind sig when an
// engine exports it only when configured to, or "" when there is nothing
// to turn on (the engine always exports it, or never does).
func AbsentHint(engine string, sig Signal) string {
	for _, a := range engineAdapters {
		if a.name != engine {
			continue
		}
		for _, m := range a.metrics {
			if m.signal == sig && m.whenAbsent != "" {
				return m.whenAbsent
			}
		}
	}
	return ""
}
