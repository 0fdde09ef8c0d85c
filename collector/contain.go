package collector

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
)

// MaxLabelValueBytes bounds a label value kneewatch copies from an
// upstream onto its own series (the model name) or into its logs. A
// longer value is cut and suffixed with a hash of the whole, so two long
// values stay distinct while one 150 KB model_name cannot multiply the
// size of /metrics by every series it lands on.
const MaxLabelValueBytes = 256

// CapLabel returns v, or when longer than MaxLabelValueBytes its first
// bytes (on a rune boundary), "…" and 8 hex digits of v's FNV-1a hash.
func CapLabel(v string) string {
	if len(v) <= MaxLabelValueBytes {
		return v
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(v))
	suffix := fmt.Sprintf("…%08x", h.Sum32())
	cut := MaxLabelValueBytes - len(suffix)
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut] + suffix
}

// duplicateSeries reports the first label set that appears twice in the
// family. Two series with the same labels in one scrape are not two
// data-parallel engines (those differ by an engine or rank label): summing
// them would double the load, and picking one would be a guess, so the
// family is not read at all. Prometheus rejects such samples too. (The
// text parser merges same-labelled histogram series into one, whose le
// then repeats: histogramFromDTO reports that as a duplicate too.)
func duplicateSeries(mf *dto.MetricFamily) (string, bool) {
	ms := mf.GetMetric()
	if len(ms) < 2 {
		return "", false
	}
	// Engines expose a handful of series per family (engines, ranks,
	// finished reasons): comparing each pair costs less than building a
	// key for every series, which this did on every scrape.
	if len(ms) <= 32 {
		for i := 1; i < len(ms); i++ {
			for j := range i {
				if sameLabelSet(ms[i], ms[j]) {
					return labelKey(ms[i]), true
				}
			}
		}
		return "", false
	}
	seen := make(map[string]struct{}, len(ms))
	for _, m := range ms {
		key := labelKey(m)
		if _, dup := seen[key]; dup {
			return key, true
		}
		seen[key] = struct{}{}
	}
	return "", false
}

// sameLabelSet reports whether two series carry the same label set, in
// any order (what labelKey makes equal).
func sameLabelSet(a, b *dto.Metric) bool {
	la, lb := a.GetLabel(), b.GetLabel()
	if len(la) != len(lb) {
		return false
	}
	for i, p := range la {
		// Usually in the same order; else search.
		if q := lb[i]; q.GetName() == p.GetName() {
			if q.GetValue() != p.GetValue() {
				return false
			}
			continue
		}
		found := false
		for _, q := range lb {
			if q.GetName() == p.GetName() {
				if q.GetValue() != p.GetValue() {
					return false
				}
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// labelKey is a series' label set in canonical (sorted) form.
func labelKey(m *dto.Metric) string {
	pairs := make([]string, 0, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		pairs = append(pairs, lp.GetName()+"="+strconv.Quote(lp.GetValue()))
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ",")
}

// histogramError is an error of histogramFromDTO with its problem kind.
type histogramError struct {
	kind string
	msg  string
}

func (e *histogramError) Error() string { return e.msg }

func histErr(kind, format string, args ...any) error {
	return &histogramError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// histogramProblemKind classifies an error of histogramFromDTO.
func histogramProblemKind(err error) string {
	var he *histogramError
	if errors.As(err, &he) {
		return he.kind
	}
	return ProblemInvalidHisto
}

// dimensionSignals are the signals a headroom dimension reads: load
// (running, waiting), throughput (output and prompt tokens, and finished
// requests for the mix that moves the knee) and the KV cache. One of them
// present but unusable makes the evaluation not ok (ReasonUnusableSignal).
var dimensionSignals = []Signal{
	SignalRunning, SignalWaiting, SignalKVUsage,
	SignalGenerationTokens, SignalPromptTokens, SignalRequestsFinished,
}

// UnusableDimension returns the first problem of snap that made a
// dimension's signal unknown although it was in the scrape.
func UnusableDimension(snap Snapshot) (Problem, bool) {
	for _, p := range snap.Problems {
		if p.Kind != ProblemMissing && slices.Contains(dimensionSignals, p.Signal) {
			return p, true
		}
	}
	return Problem{}, false
}
