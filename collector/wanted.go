package collector

import (
	"bytes"
	"strings"
)

// wantedNames is what the stream parsers keep of a scrape: the families
// some adapter reads, by canonical name (each also with _total, since
// familyIndex.find tries counters both ways), and the name prefixes
// detection looks for, so that a family not kept still counts for them.
type wantedNames struct {
	names  map[string]struct{}
	maxLen int
	// prefixes are matched against canonical names, except those marked
	// raw (DCGM's, which NormalizeDCGM matches as exposed).
	prefixes []watchedPrefix
}

type watchedPrefix struct {
	prefix string
	raw    bool
}

// engineWanted and dcgmWanted are built once from the adapter tables: a
// name an adapter reads is kept because it is in its table, never by a
// second list to keep in step.
var (
	engineWanted = newWantedNames(engineFamilyNames(), enginePrefixes())
	dcgmWanted   = newWantedNames(dcgmFamilyNames(), []watchedPrefix{{prefix: dcgmPrefix, raw: true}})
)

const dcgmPrefix = "DCGM_FI_"

func engineFamilyNames() []string {
	var names []string
	for _, name := range Engines() {
		a := adapters[name].(specAdapter)
		for _, spec := range a.metrics {
			names = append(names, spec.names...)
		}
		names = append(names, a.modelFrom...)
		names = append(names, a.extraFamilies...)
	}
	return names
}

func enginePrefixes() []watchedPrefix {
	var ps []watchedPrefix
	for _, name := range Engines() {
		for _, p := range adapters[name].(specAdapter).prefixes {
			ps = append(ps, watchedPrefix{prefix: p})
		}
	}
	return ps
}

func dcgmFamilyNames() []string {
	names := make([]string, 0, len(dcgmFields))
	for _, f := range dcgmFields {
		names = append(names, f.name)
	}
	return names
}

func newWantedNames(names []string, prefixes []watchedPrefix) *wantedNames {
	w := &wantedNames{names: map[string]struct{}{}, prefixes: prefixes}
	for _, n := range names {
		c := canonicalName(n)
		for _, k := range []string{c, c + "_total"} {
			w.names[k] = struct{}{}
			w.maxLen = max(w.maxLen, len(k))
		}
	}
	return w
}

// histogramSuffixes are the sample suffixes the classic text parser files
// under a histogram or summary family of the name without them.
var histogramSuffixes = []string{"_bucket", "_count", "_sum"}

// relevant reports whether a sample or metadata line named name may belong
// to a wanted family: the family the classic parser files it under is the
// name itself or the name without a histogram suffix, so a line is kept
// when either is wanted. (This needs no wanted name to end in a histogram
// suffix itself; TestNoWantedNameEndsInAHistogramSuffix holds that.)
func (w *wantedNames) relevant(name []byte) bool {
	if len(name) > w.maxLen+len("_bucket") {
		return false
	}
	var buf [256]byte
	c := canonicalInto(buf[:0], name)
	if _, ok := w.names[string(c)]; ok {
		return true
	}
	for _, s := range histogramSuffixes {
		if base, ok := bytes.CutSuffix(c, []byte(s)); ok {
			_, ok := w.names[string(base)]
			return ok
		}
	}
	return false
}

// relevantOM is relevant for OpenMetrics, whose families the builder names
// as the classic format would (counter "x" is "x_total", info "x" is
// "x_info"), and whose histograms add _gcount and _gsum.
func (w *wantedNames) relevantOM(name []byte) bool {
	if w.relevant(name) {
		return true
	}
	if len(name) > w.maxLen+len("_gcount") {
		return false
	}
	var buf [256]byte
	c := canonicalInto(buf[:0], name)
	for _, s := range []string{"_gcount", "_gsum"} {
		if base, ok := bytes.CutSuffix(c, []byte(s)); ok {
			_, ok := w.names[string(base)]
			return ok
		}
	}
	if len(c)+len("_info") <= len(buf) {
		_, ok := w.names[string(append(c, "_info"...))]
		return ok
	}
	return false
}

// omTypeNeeded reports whether a TYPE entry for name can decide the
// family of a sample relevantOM keeps: omBuilder.familyOf looks a sample's
// type up by its name and by its name without each suffix.
func (w *wantedNames) omTypeNeeded(name []byte) bool {
	if w.relevantOM(name) {
		return true
	}
	if len(name) > w.maxLen {
		return false
	}
	var buf [256]byte
	for _, s := range omSuffixes {
		if w.relevantOM(append(append(buf[:0], name...), s...)) {
			return true
		}
	}
	return false
}

// prefixIndex returns the index in w.prefixes of the prefix name starts
// with, or -1.
func (w *wantedNames) prefixIndex(name []byte) int {
	for i, p := range w.prefixes {
		if len(name) < len(p.prefix) {
			continue
		}
		head := name[:len(p.prefix)]
		if p.raw {
			if string(head) == p.prefix {
				return i
			}
			continue
		}
		var buf [32]byte
		if len(head) <= len(buf) && string(canonicalInto(buf[:0], head)) == p.prefix {
			return i
		}
	}
	return -1
}

// canonicalInto appends name with colons replaced by underscores to dst
// (canonicalName without allocating when dst has room).
func canonicalInto(dst, name []byte) []byte {
	start := len(dst)
	dst = append(dst, name...)
	c := dst[start:]
	for i := bytes.IndexByte(c, ':'); i >= 0; i = bytes.IndexByte(c, ':') {
		c[i] = '_'
		c = c[i+1:]
	}
	return dst
}

// createdName reports whether a family named name is a creation-time
// series, which familyIndex drops.
func createdName(name string) bool { return strings.HasSuffix(name, "_created") }
