package collector

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
)

// scanText is the scrape path for the classic text format: one pass over
// the body that finds each line's metric name, skips (with one IndexByte,
// allocating nothing) every line of a family no adapter reads, and parses
// the lines of the families it does read as expfmt's TextParser does
// (same families, same grouping of histogram and summary lines, same
// values, same errors) into client_model families, but for two things
// nothing reads: histogram buckets are kept as one slice per series beside
// the families (familyIndex.buckets), and HELP text is dropped.
//
// It parses a common subset of the format itself: unquoted metric and
// label names, lines that start with the name. On anything else in a line
// it keeps (quoted UTF-8 names, a line starting with "{", a malformed
// line, a second TYPE line, a line without its newline at the end of the
// body) it gives up with errScanFallback, and the caller parses the whole
// body with expfmt instead, so errors keep expfmt's wording and line
// numbers and nothing rare is parsed by a second implementation.
//
// One difference is deliberate: a malformed line in a family no adapter
// reads no longer fails the scrape, since it is not parsed at all. A line
// that does not even start like a sample or a comment (an HTML error page)
// still does.
func scanText(body []byte, want *wantedNames) (familyIndexInput, error) {
	s := getScanner()
	s.want, s.body = want, body
	if err := s.scan(); err != nil {
		s.release()
		return familyIndexInput{}, err
	}
	return s.result(), nil
}

// scanners keeps idle scanners, with their maps, caches, scratch and
// arenas, between scrapes. A buffered channel rather than a sync.Pool: a
// pool is emptied by every other garbage collection, which here runs every
// second or so, and with it went the caches of names and bounds that make
// a scanner cheap. It holds as many as scrapes usually run at once.
var scanners = make(chan *textScanner, 8)

func getScanner() *textScanner {
	select {
	case s := <-scanners:
		return s
	default:
		return &textScanner{fams: map[string]*scanFamily{}, strs: map[string]*string{}, verdicts: map[*wantedNames]map[string]bool{},
			bounds: map[string]float64{}, names: map[string]*cachedName{}, groups: map[string]groupSlot{},
			labels: make([]scanLabel, 0, 8), sorted: make([]scanLabel, 0, 8)}
	}
}

// Bounds on what an idle scanner keeps for its next scrape: enough for any
// engine's exposition, so a scrape reuses what the last one used, but not
// what one huge exposition needed.
const (
	keepChunks = 8    // per arena
	keepMap    = 4096 // entries of a per-scrape map
)

// release empties s for its next scrape and returns it to the pool. What
// the scrape's families are made of (messages, label pairs, buckets) is
// zeroed and handed out again by the next scrape: nothing may refer to
// the families after release (interned strings aside, which are never
// modified).
func (s *textScanner) release() {
	clearOrDrop(&s.fams)
	if len(s.groups) > keepMap {
		s.groups = map[string]groupSlot{}
	}
	clearOrDrop(&s.out.families)
	clearOrDrop(&s.out.byCanon)
	clearOrDrop(&s.out.buckets)
	clear(s.order)
	clear(s.series)
	if cap(s.series) > keepMap {
		s.order, s.series = nil, nil
	}
	s.mem.reset()
	*s = textScanner{fams: s.fams, strs: s.strs, verdicts: s.verdicts, bounds: s.bounds, names: s.names, order: s.order[:0],
		groups: s.groups, gen: s.gen + 1, series: s.series[:0], out: s.out, mem: s.mem,
		labels: s.labels[:0], sorted: s.sorted[:0], key: s.key[:0], lastGroupLabels: s.lastGroupLabels[:0],
		lastLE: leLine{labels: s.lastLE.labels[:0]}}
	select {
	case scanners <- s:
	default: // enough idle scanners
	}
}

// clearOrDrop empties a map for reuse, or replaces it when it grew large.
func clearOrDrop[K comparable, V any](m *map[K]V) {
	if len(*m) > keepMap {
		*m = map[K]V{}
		return
	}
	clear(*m)
}

// errScanFallback says the scanner met input it does not parse itself.
var errScanFallback = errors.New("text scanner: input outside the fast path")

// familyIndexInput is what a stream parser keeps of a scrape: the wanted
// families by exposed name, and the watched prefixes of the families it
// skipped.
type familyIndexInput struct {
	families map[string]*dto.MetricFamily
	skipped  []string
	// byCanon, when set, is families indexed as indexFamilies would.
	byCanon map[string]*dto.MetricFamily
	// buckets are the scanner's histograms' buckets (see familyIndex).
	buckets map[*dto.Histogram][]Bucket
	// scanner, when set, made the families and takes them back at release.
	scanner *textScanner
}

// release hands the families' memory back to the scanner that made them,
// if one did; the families must not be read afterwards. Not calling it
// only forgoes the reuse.
func (in familyIndexInput) release() {
	if in.scanner != nil {
		in.scanner.release()
	}
}

func (in familyIndexInput) index() familyIndex {
	if in.byCanon != nil {
		return familyIndex{byName: in.byCanon, skipped: in.skipped, buckets: in.buckets, borrowed: in.scanner != nil}
	}
	fi := indexFamilies(in.families)
	fi.skipped, fi.buckets = in.skipped, in.buckets
	return fi
}

type textScanner struct {
	want *wantedNames
	body []byte
	pos  int
	fams map[string]*scanFamily // wanted families by exposed name
	// order keeps the families in first-seen order for result.
	order []*scanFamily
	// seen marks the watched prefixes of skipped families.
	seen uint64
	// strs interns label names and values: an engine repeats its model
	// name and bucket bounds on every line, and every scrape. Bounded
	// (cleared when full), since values come from upstreams.
	strs map[string]*string
	// lastName is the previous sample line's name, and lastRelevant
	// whether it was kept; lastFamily (with lastCount and lastSum) what
	// it resolved to, nil when not resolved since the last metadata line.
	lastName           []byte
	lastRelevant       bool
	lastFamily         *scanFamily
	lastCount, lastSum bool
	// lastLE is where the last fully read bucket line's le sat.
	lastLE leLine
	// lastGroup is the histogram or summary series (an index in series)
	// of the last grouped line, with its family and labels.
	lastGroupFamily *scanFamily
	lastGroup       int32
	lastGroupLabels []scanLabel
	// groups are the histogram and summary series by family and labels
	// (le or quantile aside; see groupKey), which expfmt merges across
	// lines, as indexes in series. Kept across scrapes (a series' key is
	// the same every scrape), each entry stamped with the scrape, gen,
	// that made it.
	groups map[string]groupSlot
	gen    uint32
	series []scanSeries
	// verdicts remembers relevant's answers, by wanted set and exposed name.
	verdicts map[*wantedNames]map[string]bool
	// bounds remembers parsed le values by their text.
	bounds map[string]float64
	// names remembers family names with their canonical form.
	names map[string]*cachedName
	// Per-line scratch.
	labels, sorted []scanLabel
	key            []byte
	// mem is what the families are made of, reused scrape after scrape.
	mem scanArenas
	// out is the result's maps, reused.
	out familyIndexInput
}

// scanArenas are the arenas a scrape's families come from.
type scanArenas struct {
	metrics    arena[dto.Metric]
	pairs      arena[dto.LabelPair]
	pairPtrs   arena[*dto.LabelPair]
	metricPtrs arena[*dto.Metric]
	counters   arena[dto.Counter]
	gauges     arena[dto.Gauge]
	untypeds   arena[dto.Untyped]
	histograms arena[dto.Histogram]
	summaries  arena[dto.Summary]
	families   arena[scanFamily]
	buckets    arena[Bucket]
	floats     arena[float64]
	uints      arena[uint64]
}

func (m *scanArenas) reset() {
	m.metrics.reset(keepChunks)
	m.pairs.reset(keepChunks)
	m.pairPtrs.reset(keepChunks)
	m.metricPtrs.reset(keepChunks)
	m.counters.reset(keepChunks)
	m.gauges.reset(keepChunks)
	m.untypeds.reset(keepChunks)
	m.histograms.reset(keepChunks)
	m.summaries.reset(keepChunks)
	m.families.reset(keepChunks)
	m.buckets.reset(keepChunks)
	m.floats.reset(keepChunks)
	m.uints.reset(keepChunks)
}

type groupSlot struct {
	gen   uint32
	index int32
}

// scanSeries is one histogram or summary series: its message, and a
// histogram's buckets, kept apart from the message.
type scanSeries struct {
	m       *dto.Metric
	buckets []Bucket
}

type scanLabel struct{ name, value []byte }

// scanFamily is one wanted family as expfmt's parser tracks it.
type scanFamily struct {
	mf    *dto.MetricFamily // &mfv
	mfv   dto.MetricFamily
	canon string // mf's name in canonical form
	typed bool   // mf.Type is set (by a TYPE line or the first sample)
	help  bool
	// name is the family's name as cached across scrapes, where the most
	// buckets a histogram of the family has had is kept.
	name *cachedName
}

// typ is mf.GetType(): COUNTER (the zero value) until typed, as in expfmt.
func (f *scanFamily) typ() dto.MetricType { return f.mf.GetType() }

func (s *textScanner) scan() error {
	body := s.body
	for s.pos < len(body) {
		// Leading blanks and tabs are skipped; a line of only those is empty.
		for s.pos < len(body) && (body[s.pos] == ' ' || body[s.pos] == '\t') {
			s.pos++
		}
		if s.pos == len(body) {
			return nil
		}
		eol := bytes.IndexByte(body[s.pos:], '\n')
		if eol < 0 {
			// expfmt fails a last line without its newline.
			return errScanFallback
		}
		line := body[s.pos : s.pos+eol]
		s.pos += eol + 1
		if len(line) == 0 {
			continue
		}
		var err error
		if line[0] == '#' {
			err = s.comment(line[1:])
		} else {
			err = s.sample(line)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// splitMetricName splits an unquoted metric name off the start of b. ok is
// false when b does not start with a name or the name runs into a quote
// (expfmt's quoted-name syntax, left to expfmt).
func splitMetricName(b []byte) (name, rest []byte, ok bool) {
	if len(b) == 0 || !nameStart(b[0]) {
		return nil, b, false
	}
	i := 1
	for i < len(b) && byteClass[b[i]]&className != 0 {
		i++
	}
	if i < len(b) && b[i] == '"' {
		return nil, b, false
	}
	return b[:i], b[i:], true
}

func nameStart(c byte) bool { return byteClass[c]&classNameStart != 0 }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func labelNameStart(c byte) bool { return byteClass[c]&classLabelStart != 0 }

// byteClass marks the bytes that may start (or, with digits, continue)
// an unquoted metric or label name, looked up once per byte of every
// line's name.
var byteClass = func() (t [256]uint8) {
	for c := range 256 {
		b := byte(c)
		if (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || b == '_' {
			t[c] |= classNameStart | classLabelStart | className
		}
		if b == ':' {
			t[c] |= classNameStart | className
		}
		if isDigit(b) {
			t[c] |= className
		}
	}
	return t
}()

const (
	classNameStart  = 1 << iota // may start a metric name
	classLabelStart             // may start a label name
	className                   // may continue a metric name
)

func trimBlank(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// skipped records a line of a family not kept, for detection.
func (s *textScanner) skipped(name []byte) error {
	// A _created family is dropped by familyIndex and counts for nothing.
	// A name such as x_created_count may belong to a histogram x_created
	// (dropped) or be its own family (kept): only expfmt's full state
	// says, so it is left to expfmt.
	if bytes.HasSuffix(name, []byte("_created")) {
		return nil
	}
	for _, suffix := range histogramSuffixes {
		if base, ok := bytes.CutSuffix(name, []byte(suffix)); ok && bytes.HasSuffix(base, []byte("_created")) {
			return errScanFallback
		}
	}
	if i := s.want.prefixIndex(name); i >= 0 {
		s.seen |= 1 << i
	}
	return nil
}

// comment handles a line after its '#'.
func (s *textScanner) comment(b []byte) error {
	b = trimBlank(b)
	if len(b) == 0 {
		return nil
	}
	kw := b
	if i := bytes.IndexAny(b, " \t"); i >= 0 {
		kw = b[:i]
	}
	help, typ := string(kw) == "HELP", string(kw) == "TYPE"
	if !help && !typ {
		return nil // a plain comment, or a keyword alone on its line
	}
	b = trimBlank(b[len(kw):])
	if len(b) == 0 {
		return nil
	}
	name, rest, ok := splitMetricName(b)
	if !ok {
		return errScanFallback
	}
	if !s.relevant(name) {
		return nil
	}
	// A metadata line may make a family, which changes what a sample
	// name resolves to: forget the last resolution.
	s.lastFamily = nil
	if len(rest) == 0 {
		return nil // "# TYPE name": not an error, and no family is made
	}
	if rest[0] != ' ' && rest[0] != '\t' {
		return errScanFallback // invalid metric name in comment
	}
	f, _, _ := s.family(name)
	rest = trimBlank(rest)
	if len(rest) == 0 {
		return nil
	}
	if help {
		if f.help || !validHelp(rest) {
			return errScanFallback
		}
		f.help = true
		return nil
	}
	if f.typed {
		return errScanFallback // second TYPE line, or TYPE after samples
	}
	t, ok := metricType(rest)
	if !ok {
		return errScanFallback
	}
	f.typed = true
	f.mf.Type = typeEnum(t)
	return nil
}

// metricTypes holds one value per metric type for families' Type to point
// to: shared by every scrape's families, so never written through.
var metricTypes = [...]dto.MetricType{
	dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_SUMMARY,
	dto.MetricType_UNTYPED, dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM,
}

func typeEnum(t dto.MetricType) *dto.MetricType {
	if int(t) >= 0 && int(t) < len(metricTypes) && metricTypes[t] == t {
		return &metricTypes[t]
	}
	return t.Enum()
}

// validHelp reports whether a docstring's escapes are ones expfmt knows.
func validHelp(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' {
			if i+1 >= len(b) {
				return false
			}
			switch b[i+1] {
			case '\\', 'n', '"':
				i++
			default:
				return false
			}
		}
	}
	return true
}

// metricType reads a TYPE line's type as expfmt does: the rest of the
// line, in any case, "gaugehistogram" included.
func metricType(b []byte) (dto.MetricType, bool) {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return 0, false // Unicode case folding is left to expfmt
		}
	}
	for name, v := range dto.MetricType_value {
		if bytes.EqualFold(b, []byte(name)) {
			return dto.MetricType(v), true
		}
	}
	if bytes.EqualFold(b, []byte("GAUGEHISTOGRAM")) {
		return dto.MetricType_GAUGE_HISTOGRAM, true
	}
	return 0, false
}

// family finds the family a line named name belongs to, as expfmt's
// setOrCreateCurrentMF does: the name itself if known, else the name
// without _count/_sum for a summary, or without _count/_sum/_bucket for a
// histogram, else a new family of that name. count and sum say which
// special line of a summary or histogram it is.
func (s *textScanner) family(name []byte) (f *scanFamily, count, sum bool) {
	if f := s.fams[string(name)]; f != nil {
		return f, false, false
	}
	isCount, isSum := bytes.HasSuffix(name, []byte("_count")) && len(name) > 6, bytes.HasSuffix(name, []byte("_sum")) && len(name) > 4
	isBucket := bytes.HasSuffix(name, []byte("_bucket")) && len(name) > 7
	var base []byte
	switch {
	case isCount:
		base = name[:len(name)-6]
	case isSum:
		base = name[:len(name)-4]
	case isBucket:
		base = name[:len(name)-7]
	}
	if base != nil {
		if f := s.fams[string(base)]; f != nil {
			switch t := f.typ(); {
			case (isCount || isSum) && t == dto.MetricType_SUMMARY:
				return f, isCount, isSum
			case t == dto.MetricType_HISTOGRAM || t == dto.MetricType_GAUGE_HISTOGRAM:
				return f, isCount, isSum
			}
		}
	}
	cn := s.familyName(name)
	f = s.mem.families.one(slabSize)
	f.canon, f.name = cn.canon, cn
	f.mf = &f.mfv
	f.mf.Name = cn.raw
	s.fams[*cn.raw] = f
	s.order = append(s.order, f)
	return f, false, false
}

// cachedName is a family name as exposed and in canonical form, kept by
// the pooled scanner across scrapes so neither is allocated again, and
// the most buckets a histogram of the family has had, so its next one's
// are allocated at once.
type cachedName struct {
	raw     *string
	canon   string
	buckets int
	series  int // the most series the family has had
}

func (s *textScanner) familyName(name []byte) *cachedName {
	if cn, ok := s.names[string(name)]; ok {
		return cn
	}
	raw := string(name)
	cn := &cachedName{raw: &raw, canon: canonicalName(raw)}
	if len(s.names) >= maxVerdicts {
		clear(s.names)
	}
	s.names[raw] = cn
	return cn
}

// sample handles a sample line (leading blanks already skipped).
func (s *textScanner) sample(line []byte) error {
	if !s.lastRelevant && len(s.lastName) > 0 && len(line) > len(s.lastName) &&
		(line[len(s.lastName)] == '{' || line[len(s.lastName)] == ' ' || line[len(s.lastName)] == '\t') &&
		bytes.HasPrefix(line, s.lastName) {
		return nil // another line of the family just skipped
	}
	name, rest, ok := splitMetricName(line)
	if !ok {
		// A quoted name, "{" (a name inside the braces), or not a sample
		// at all: expfmt decides.
		return errScanFallback
	}
	// Lines of one family come together (a histogram's buckets): the
	// previous line's verdict holds for the same name.
	if !bytes.Equal(name, s.lastName) {
		s.lastName, s.lastRelevant, s.lastFamily = name, s.relevant(name), nil
		if !s.lastRelevant {
			if err := s.skipped(name); err != nil {
				return err
			}
		}
	}
	if !s.lastRelevant {
		return nil
	}
	// Lines of one name resolve to one family until a metadata line
	// makes a new one (comment clears lastFamily).
	if s.lastFamily == nil {
		s.lastFamily, s.lastCount, s.lastSum = s.family(name)
	}
	f, isCount, isSum := s.lastFamily, s.lastCount, s.lastSum
	if !f.typed {
		f.typed = true
		f.mf.Type = typeEnum(dto.MetricType_UNTYPED)
	}
	t := f.typ()
	grouped := t == dto.MetricType_SUMMARY || t == dto.MetricType_HISTOGRAM || t == dto.MetricType_GAUGE_HISTOGRAM
	rest = trimBlank(rest)
	bucket, quantile := math.NaN(), math.NaN()
	s.labels = s.labels[:0]
	if len(rest) > 0 && rest[0] == '{' {
		if r, le, ok := s.sameBucketLabels(f, rest[1:]); ok {
			// A bucket line like the last but for its le.
			rest, bucket = r, le
			s.labels = append(s.labels, s.lastLE.labels...)
		} else {
			var err error
			if rest, bucket, quantile, err = s.readLabels(rest[1:], f); err != nil {
				return err
			}
		}
	}
	// The value runs to the next blank or tab; a timestamp may follow.
	vEnd := 0
	for vEnd < len(rest) && rest[vEnd] != ' ' && rest[vEnd] != '\t' {
		vEnd++
	}
	value, err := parseExpfmtFloat(rest[:vEnd])
	if err != nil {
		return errScanFallback
	}
	var ts *int64
	if vEnd < len(rest) {
		tsText := trimBlank(rest[vEnd:])
		if len(tsText) == 0 || bytes.ContainsAny(tsText, " \t") {
			return errScanFallback // trailing blanks, or more after the timestamp
		}
		v, err := strconv.ParseInt(string(tsText), 10, 64)
		if err != nil {
			return errScanFallback
		}
		ts = &v
	}

	var m *dto.Metric
	if grouped {
		// A histogram's or summary's lines with the same labels are one
		// series, which keeps its first line's labels, as in expfmt. The
		// lines of one series usually come together, in the same label
		// order: then the previous line's series is this one's.
		if f != s.lastGroupFamily || !sameScanLabels(s.labels, s.lastGroupLabels) {
			key := s.groupKey(f.mf.GetName())
			g, ok := s.groups[string(key)]
			if !ok || g.gen != s.gen {
				// New in this scrape (a key from an earlier one is
				// overwritten, which allocates no key).
				g = groupSlot{gen: s.gen, index: int32(len(s.series))}
				s.series = append(s.series, scanSeries{m: s.newSeries(f)})
				s.groups[string(key)] = g
			}
			i := g.index
			s.lastGroupFamily, s.lastGroup = f, i
			s.lastGroupLabels = append(s.lastGroupLabels[:0], s.labels...)
		}
		m = s.series[s.lastGroup].m
	} else {
		m = s.newSeries(f)
	}
	switch t {
	case dto.MetricType_COUNTER:
		m.Counter = s.mem.counters.one(slabSize)
		m.Counter.Value = s.float(value)
	case dto.MetricType_GAUGE:
		m.Gauge = s.mem.gauges.one(slabSize)
		m.Gauge.Value = s.float(value)
	case dto.MetricType_UNTYPED:
		m.Untyped = s.mem.untypeds.one(slabSize)
		m.Untyped.Value = s.float(value)
	case dto.MetricType_SUMMARY:
		if m.Summary == nil {
			m.Summary = s.mem.summaries.one(slabSize)
		}
		switch {
		case isCount:
			m.Summary.SampleCount = s.uint(uint64(value))
		case isSum:
			m.Summary.SampleSum = s.float(value)
		case !math.IsNaN(quantile):
			m.Summary.Quantile = append(m.Summary.Quantile, &dto.Quantile{Quantile: s.float(quantile), Value: s.float(value)})
		}
	default: // histogram, gauge histogram
		if m.Histogram == nil {
			m.Histogram = s.mem.histograms.one(slabSize)
		}
		switch {
		case isCount:
			if u := uint64(value); value == float64(u) {
				m.Histogram.SampleCount = s.uint(u)
			} else {
				if value < 0 {
					return errScanFallback
				}
				m.Histogram.SampleCountFloat = s.float(value)
			}
		case isSum:
			m.Histogram.SampleSum = s.float(value)
		case !math.IsNaN(bucket):
			// expfmt keeps a whole count as an integer and any other as a
			// float, and fails a negative one; either way the count read
			// is value. The buckets are kept apart from the client_model
			// message (familyIndex.histogram reads them): one slice per
			// series rather than three small objects per bucket.
			if u := uint64(value); value != float64(u) && value < 0 {
				return errScanFallback
			}
			// A grouped line's series is s.lastGroup.
			ser := &s.series[s.lastGroup]
			if ser.buckets == nil {
				// Room for as many buckets as the family's last
				// histogram had.
				ser.buckets = s.mem.buckets.take(max(f.name.buckets, 4), 256)[:0]
			}
			ser.buckets = append(ser.buckets, Bucket{UpperBound: bucket, Count: value})
			f.name.buckets = max(f.name.buckets, len(ser.buckets))
		}
	}
	if ts != nil {
		m.TimestampMs = ts
	}
	return nil
}

// newSeries appends a series with the line's labels to its family.
func (s *textScanner) newSeries(f *scanFamily) *dto.Metric {
	m := s.mem.metrics.one(slabSize)
	if len(s.labels) > 0 {
		m.Label = s.labelPairs()
	}
	if f.mf.Metric == nil {
		// Room for as many series as the family had last time.
		f.mf.Metric = s.mem.metricPtrs.take(max(f.name.series, 1), 4*slabSize)[:0]
	}
	f.mf.Metric = append(f.mf.Metric, m)
	f.name.series = max(f.name.series, len(f.mf.Metric))
	return m
}

// readLabels reads a label set after its '{' into s.labels, returning
// what follows the '}' (blanks skipped) and a histogram's le or a
// summary's quantile (NaN when absent), which are not labels of the
// series.
func (s *textScanner) readLabels(b []byte, f *scanFamily) (rest []byte, bucket, quantile float64, err error) {
	t := f.typ()
	bucket, quantile = math.NaN(), math.NaN()
	histogram := t == dto.MetricType_HISTOGRAM || t == dto.MetricType_GAUGE_HISTOGRAM
	summary := t == dto.MetricType_SUMMARY
	sawLE, sawQuantile := false, false
	block := b
	le := leLine{family: f, labels: s.lastLE.labels[:0]}
	s.lastLE.ok = false
	for {
		b = trimBlank(b)
		if len(b) == 0 {
			return nil, 0, 0, errScanFallback
		}
		if b[0] == '}' {
			if le.ok {
				// Remember where this line's le sat, for sameBucketLabels.
				le.block = block[:len(block)-len(b)+1]
				le.labels = append(le.labels, s.labels...)
				s.lastLE = le
			}
			return trimBlank(b[1:]), bucket, quantile, nil
		}
		if !labelNameStart(b[0]) {
			return nil, 0, 0, errScanFallback
		}
		i := 1
		for i < len(b) && (labelNameStart(b[i]) || isDigit(b[i])) {
			i++
		}
		if i < len(b) && b[i] == '"' {
			return nil, 0, 0, errScanFallback
		}
		name := b[:i]
		b = trimBlank(b[i:])
		if len(b) == 0 || b[0] != '=' || string(name) == "__name__" {
			return nil, 0, 0, errScanFallback
		}
		b = trimBlank(b[1:])
		if len(b) == 0 || b[0] != '"' {
			return nil, 0, 0, errScanFallback
		}
		valStart := len(block) - len(b) + 1
		value, n, ok := quotedLabelValue(b[1:])
		if !ok {
			return nil, 0, 0, errScanFallback
		}
		b = b[1+n:]
		switch {
		case histogram && string(name) == "le":
			if sawLE {
				return nil, 0, 0, errScanFallback
			}
			sawLE = true
			if bucket, err = s.bound(value); err != nil {
				return nil, 0, 0, errScanFallback
			}
			// Only an le written without escapes sits in the block as is.
			le.ok, le.valStart, le.valEnd = n == len(value)+1, valStart, valStart+len(value)
		case summary && string(name) == "quantile":
			if sawQuantile {
				return nil, 0, 0, errScanFallback
			}
			sawQuantile = true
			if quantile, err = parseExpfmtFloat(value); err != nil {
				return nil, 0, 0, errScanFallback
			}
		default:
			for _, l := range s.labels {
				if bytes.Equal(l.name, name) {
					return nil, 0, 0, errScanFallback // duplicate label names
				}
			}
			s.labels = append(s.labels, scanLabel{name: name, value: value})
		}
		b = trimBlank(b)
		if len(b) == 0 {
			return nil, 0, 0, errScanFallback
		}
		switch b[0] {
		case ',':
			b = b[1:]
		case '}':
		default:
			return nil, 0, 0, errScanFallback
		}
	}
}

// leLine is where the last fully read histogram line's le value sat in
// its label block (after "{", through "}"), and its other labels.
type leLine struct {
	family           *scanFamily
	block            []byte
	valStart, valEnd int // the le value, quotes excluded
	labels           []scanLabel
	ok               bool
}

// sameBucketLabels reads the label block b of a line of family f as the
// last fully read one (s.lastLE) if it is byte for byte that block with
// another le value: a histogram's bucket lines differ only there. It then
// returns what follows the "}" and the bound; otherwise ok is false and
// the block is read in full. Equal bytes around the value tokenize
// alike, and a value holding neither a quote nor a backslash is taken
// as is, so the result is what readLabels would return.
func (s *textScanner) sameBucketLabels(f *scanFamily, b []byte) (rest []byte, bound float64, ok bool) {
	p := &s.lastLE
	if !p.ok || p.family != f || !bytes.HasPrefix(b, p.block[:p.valStart]) {
		return nil, 0, false
	}
	j := bytes.IndexByte(b[p.valStart:], '"')
	if j < 0 {
		return nil, 0, false
	}
	v := b[p.valStart : p.valStart+j]
	suffix := p.block[p.valEnd:]
	if bytes.IndexByte(v, '\\') >= 0 || !bytes.HasPrefix(b[p.valStart+j:], suffix) {
		return nil, 0, false
	}
	bound, err := s.bound(v)
	if err != nil {
		return nil, 0, false
	}
	return trimBlank(b[p.valStart+j+len(suffix):]), bound, true
}

// quotedLabelValue reads a quoted label value up to its closing quote (b starts
// after the opening one), unescaping \", \\ and \n. n is the number of
// bytes read, closing quote included. ok is false for another escape, an
// unterminated value or invalid UTF-8, which expfmt rejects.
func quotedLabelValue(b []byte) (value []byte, n int, ok bool) {
	end := bytes.IndexByte(b, '"')
	if end < 0 {
		return nil, 0, false
	}
	if bytes.IndexByte(b[:end], '\\') < 0 {
		v := b[:end]
		return v, end + 1, utf8.Valid(v)
	}
	var out []byte
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			return out, i + 1, utf8.Valid(out)
		case '\\':
			if i+1 >= len(b) {
				return nil, 0, false
			}
			i++
			switch b[i] {
			case '"', '\\':
				out = append(out, b[i])
			case 'n':
				out = append(out, '\n')
			default:
				return nil, 0, false
			}
		default:
			out = append(out, c)
		}
	}
	return nil, 0, false
}

// parseExpfmtFloat parses a sample value or an le/quantile label as expfmt
// does: strconv's syntax without hexadecimal exponents or underscores.
func parseExpfmtFloat(b []byte) (float64, error) {
	if len(b) == 0 {
		return 0, errScanFallback
	}
	if v, ok := plainDecimal(b); ok {
		return v, nil
	}
	for _, c := range b {
		if c == 'p' || c == 'P' || c == '_' {
			return 0, errScanFallback
		}
	}
	return strconv.ParseFloat(string(b), 64)
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// plainDecimal parses the values engines write most ("12", "0.4171",
// "440.0", "-1.0"): an optional sign, at most 15 digits and at most one
// point, nothing else. Then the digits are an integer below 2^53 and the
// point divides by an exact power of ten, so one correctly rounded
// division gives what strconv.ParseFloat gives (its own exact fast path).
// ok is false for anything else, which strconv parses.
func plainDecimal(b []byte) (float64, bool) {
	neg := false
	switch b[0] {
	case '-':
		neg = true
		b = b[1:]
	case '+':
		b = b[1:]
	}
	var mant uint64
	digits, frac := 0, -1
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			mant = mant*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0:
			frac = 0
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 {
		return 0, false
	}
	v := float64(mant)
	if frac > 0 {
		v /= pow10[frac]
	}
	if neg {
		v = -v
	}
	return v, true
}

// groupKey is a histogram's or summary's series key: the family name and
// the line's labels (le and quantile aside), sorted by name as expfmt's
// signature is; the labels themselves stay in line order. It reuses
// s.key. (0xff never occurs in UTF-8, so the key is unambiguous.)
func (s *textScanner) groupKey(family string) []byte {
	s.sorted = append(s.sorted[:0], s.labels...)
	slices.SortFunc(s.sorted, func(a, b scanLabel) int { return bytes.Compare(a.name, b.name) })
	k := append(s.key[:0], family...)
	for _, l := range s.sorted {
		k = append(k, 0xff)
		k = append(k, l.name...)
		k = append(k, 0xff)
		k = append(k, l.value...)
	}
	s.key = k
	return k
}

// labelPairs builds the series' label pairs, in line order.
func (s *textScanner) labelPairs() []*dto.LabelPair {
	out := s.mem.pairPtrs.take(len(s.labels), 4*slabSize)
	for i, l := range s.labels {
		p := s.mem.pairs.one(4 * slabSize)
		p.Name = s.intern(l.name)
		p.Value = s.intern(l.value)
		out[i] = p
	}
	return out
}

func (s *textScanner) intern(b []byte) *string {
	if p, ok := s.strs[string(b)]; ok {
		return p
	}
	v := string(b)
	p := &v
	if len(s.strs) >= maxVerdicts {
		clear(s.strs)
	}
	s.strs[v] = p
	return p
}

// Arena chunk sizes: a family's series and labels are tens per scrape,
// numbers a few per series (buckets are kept apart), so small chunks
// waste little on a small scrape and are few on a large one.
const (
	slabSize       = 16
	numberSlabSize = 64
)

func (s *textScanner) uint(v uint64) *uint64 {
	p := s.mem.uints.one(numberSlabSize)
	*p = v
	return p
}

// sameScanLabels reports whether two lines' labels are the same, in the
// same order.
func sameScanLabels(a, b []scanLabel) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].name, b[i].name) || !bytes.Equal(a[i].value, b[i].value) {
			return false
		}
	}
	return true
}

// relevant is wantedNames.relevant remembered by name: the pooled scanner
// keeps the verdicts across scrapes, as engines repeat their names. The
// memory is bounded (cleared when full), since names come from upstreams.
func (s *textScanner) relevant(name []byte) bool {
	cache := s.verdicts[s.want]
	if cache == nil {
		cache = map[string]bool{}
		s.verdicts[s.want] = cache
	}
	if v, ok := cache[string(name)]; ok {
		return v
	}
	v := s.want.relevant(name)
	if len(cache) >= maxVerdicts {
		clear(cache)
	}
	cache[string(name)] = v
	return v
}

const maxVerdicts = 8192

// bound parses a bucket bound, remembered by its text: every histogram of
// an engine repeats the same few bounds.
func (s *textScanner) bound(b []byte) (float64, error) {
	if v, ok := s.bounds[string(b)]; ok {
		return v, nil
	}
	v, err := parseExpfmtFloat(b)
	if err != nil {
		return 0, err
	}
	if len(s.bounds) >= maxVerdicts {
		clear(s.bounds)
	}
	s.bounds[string(b)] = v
	return v, nil
}

func (s *textScanner) float(v float64) *float64 {
	p := s.mem.floats.one(numberSlabSize)
	*p = v
	return p
}

// result returns the non-empty families (expfmt drops empty ones), the
// histograms' buckets, and the watched prefixes of skipped families.
// (expfmt then makes a histogram's counts all float when one is: the
// values stay the same, and the buckets here are floats already.)
func (s *textScanner) result() familyIndexInput {
	out := &s.out
	if out.families == nil {
		out.families = make(map[string]*dto.MetricFamily, len(s.order))
	}
	// The canonical index, built here as indexFamilies builds it, from
	// the names cached with their canonical form.
	if out.byCanon == nil {
		out.byCanon = make(map[string]*dto.MetricFamily, len(s.order))
	}
	for _, f := range s.order {
		if len(f.mf.Metric) == 0 {
			continue
		}
		out.families[f.mf.GetName()] = f.mf
		if !createdName(f.mf.GetName()) {
			if prev, ok := out.byCanon[f.canon]; !ok || !strings.Contains(prev.GetName(), ":") {
				out.byCanon[f.canon] = f.mf
			}
		}
	}
	out.skipped = out.skipped[:0]
	for i, p := range s.want.prefixes {
		if s.seen&(1<<i) != 0 {
			out.skipped = append(out.skipped, p.prefix)
		}
	}
	for _, ser := range s.series {
		if ser.buckets != nil {
			if out.buckets == nil {
				out.buckets = map[*dto.Histogram][]Bucket{}
			}
			out.buckets[ser.m.Histogram] = ser.buckets
		}
	}
	out.scanner = s
	return *out
}
