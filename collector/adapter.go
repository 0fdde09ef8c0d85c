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

// adapters lists every engine adapter by the name used in config and in
// Snapshot.Engine.
var adapters = map[string]adapter{
	"vllm":   vllmAdapter,
	"sglang": sglangAdapter,
	"tgi":    tgiAdapter,
	"trtllm": trtllmAdapter,
}

// Engines returns the adapter names, sorted.
func Engines() []string {
	return slices.Sorted(maps.Keys(adapters))
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
		return "", fmt.Errorf("%w (looked for vllm:*, sglang:*, tgi_*, nv_trt_llm_* names)", ErrNoEngine)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("scrape carries metrics of several engines (%s); set the target's engine", strings.Join(found, ", "))
}

// Normalize turns a parsed scrape into a Snapshot with the adapter named by
// opts.Engine, or the detected one. Snapshot.Time is left for the caller.
func Normalize(families map[string]*dto.MetricFamily, opts Options) (Snapshot, error) {
	fi := indexFamilies(families)
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
type familyIndex map[string]*dto.MetricFamily

func canonicalName(name string) string { return strings.ReplaceAll(name, ":", "_") }

func indexFamilies(families map[string]*dto.MetricFamily) familyIndex {
	fi := make(familyIndex, len(families))
	for name, mf := range families {
		if strings.HasSuffix(name, "_created") {
			continue
		}
		key := canonicalName(name)
		// If both spellings are present, keep the engine's own (with colons).
		if prev, ok := fi[key]; ok && strings.Contains(prev.GetName(), ":") {
			continue
		}
		fi[key] = mf
	}
	return fi
}

// hasPrefix reports whether any family's canonical name starts with one of
// prefixes (given in canonical form).
func (fi familyIndex) hasPrefix(prefixes ...string) bool {
	for name := range fi {
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
		n = canonicalName(n)
		if counter && !strings.HasSuffix(n, "_total") {
			if mf, ok := fi[n+"_total"]; ok {
				return mf
			}
		}
		if mf, ok := fi[n]; ok {
			return mf
		}
	}
	return nil
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
