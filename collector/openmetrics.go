package collector

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"google.golang.org/protobuf/proto"
)

// ParseOpenMetrics parses an OpenMetrics 1.0 text exposition with
// Prometheus's own parser (exemplars, # EOF, _created lines and units
// included) into the families the classic text parser would have made of
// the same metrics, so the adapters read both alike: a counter family is
// named with its _total suffix, an info family with _info; exemplars and
// _created lines are dropped.
func ParseOpenMetrics(body []byte) (map[string]*dto.MetricFamily, error) {
	in, err := parseOpenMetrics(body, nil)
	return in.families, err
}

// parseOpenMetrics is ParseOpenMetrics keeping only what want needs (all
// of it when want is nil). Prometheus's parser still reads and checks
// every line; the series of other families are skipped before their
// labels are built, which is where its cost is.
func parseOpenMetrics(body []byte, want *wantedNames) (familyIndexInput, error) {
	p := textparse.NewOpenMetricsParser(body, labels.NewSymbolTable(), textparse.WithOMParserSTSeriesSkipped())
	b := omBuilder{families: map[string]*dto.MetricFamily{}, types: map[string]model.MetricType{}, grouped: map[string]*dto.Metric{}}
	var seen uint64
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return familyIndexInput{}, fmt.Errorf("parsing OpenMetrics exposition: %w", err)
		}
		switch entry {
		case textparse.EntryType:
			name, t := p.Type()
			// _created families are kept too: whether a skipped one is
			// dropped (see omSkippedCounts) depends on its type.
			if want == nil || want.omTypeNeeded(name) || bytes.HasSuffix(name, []byte("_created")) {
				b.types[string(name)] = t
			}
		case textparse.EntrySeries:
			series, ts, v := p.Series()
			if want != nil {
				if name, _, ok := splitMetricName(series); ok && !want.relevantOM(name) {
					counts, sure := b.omSkippedCounts(name)
					if !sure {
						// Whether this family is dropped as a _created one
						// depends on types not kept: read everything.
						return parseOpenMetrics(body, nil)
					}
					if i := want.prefixIndex(name); i >= 0 && counts {
						seen |= 1 << i
					}
					continue
				}
			}
			var ls labels.Labels
			p.Labels(&ls)
			b.add(ls, ts, v)
		}
	}
	in := familyIndexInput{families: b.families}
	if want != nil {
		for i, p := range want.prefixes {
			if seen&(1<<i) != 0 {
				in.skipped = append(in.skipped, p.prefix)
			}
		}
	}
	return in, nil
}

// omSuffixes are the sample suffixes omBuilder.familyOf strips to find a
// sample's declared family.
var omSuffixes = []string{"_total", "_bucket", "_count", "_sum", "_gcount", "_gsum", "_info"}

// omSkippedCounts reports whether the family a skipped sample would be
// filed under counts for detection: it does unless its name ends in
// _created, which familyIndex drops. A name ending in _created is filed
// by its own TYPE (kept for such names): a counter's family is name_total,
// an info's name_info, anything else the name itself. A name with a suffix
// whose stem ends in _created (x_created_total) depends on TYPEs not
// kept: sure is false, and the caller reads everything.
func (b *omBuilder) omSkippedCounts(name []byte) (counts, sure bool) {
	if bytes.HasSuffix(name, []byte("_created")) {
		switch b.types[string(name)] {
		case model.MetricTypeCounter, model.MetricTypeInfo:
			return true, true
		}
		return false, true
	}
	for _, s := range omSuffixes {
		if base, ok := bytes.CutSuffix(name, []byte(s)); ok && bytes.HasSuffix(base, []byte("_created")) {
			return false, false
		}
	}
	return true, true
}

// omBuilder groups OpenMetrics samples into classic-format families.
type omBuilder struct {
	families map[string]*dto.MetricFamily
	types    map[string]model.MetricType // by OpenMetrics family name
	// grouped holds histogram and summary series by family and labels
	// (le and quantile aside), as their samples arrive on several lines.
	grouped map[string]*dto.Metric
}

// familyOf finds the declared family a sample name belongs to and the
// suffix it carries.
func (b *omBuilder) familyOf(name string) (string, model.MetricType, string) {
	if t, ok := b.types[name]; ok {
		return name, t, ""
	}
	for _, suffix := range omSuffixes {
		if fam, ok := strings.CutSuffix(name, suffix); ok {
			if t, ok := b.types[fam]; ok {
				return fam, t, suffix
			}
		}
	}
	return name, model.MetricTypeUnknown, ""
}

func (b *omBuilder) family(name string, t dto.MetricType) *dto.MetricFamily {
	mf, ok := b.families[name]
	if !ok {
		mf = &dto.MetricFamily{Name: proto.String(name), Type: t.Enum()}
		b.families[name] = mf
	}
	return mf
}

func (b *omBuilder) add(ls labels.Labels, ts *int64, v float64) {
	name := ls.Get(model.MetricNameLabel)
	fam, t, suffix := b.familyOf(name)
	var pairs []*dto.LabelPair
	var le, quantile string
	ls.Range(func(l labels.Label) {
		switch {
		case l.Name == model.MetricNameLabel:
		case l.Name == model.BucketLabel && (suffix == "_bucket"):
			le = l.Value
		case l.Name == model.QuantileLabel && t == model.MetricTypeSummary && suffix == "":
			quantile = l.Value
		default:
			pairs = append(pairs, &dto.LabelPair{Name: proto.String(l.Name), Value: proto.String(l.Value)})
		}
	})
	m := &dto.Metric{Label: pairs}
	if ts != nil {
		m.TimestampMs = ts
	}
	switch t {
	case model.MetricTypeCounter:
		m.Counter = &dto.Counter{Value: proto.Float64(v)}
		b.family(fam+"_total", dto.MetricType_COUNTER).Metric = append(b.family(fam+"_total", dto.MetricType_COUNTER).Metric, m)
	case model.MetricTypeGauge:
		mf := b.family(fam, dto.MetricType_GAUGE)
		m.Gauge = &dto.Gauge{Value: proto.Float64(v)}
		mf.Metric = append(mf.Metric, m)
	case model.MetricTypeInfo:
		mf := b.family(fam+"_info", dto.MetricType_GAUGE)
		m.Gauge = &dto.Gauge{Value: proto.Float64(v)}
		mf.Metric = append(mf.Metric, m)
	case model.MetricTypeHistogram, model.MetricTypeGaugeHistogram:
		dt := dto.MetricType_HISTOGRAM
		if t == model.MetricTypeGaugeHistogram {
			dt = dto.MetricType_GAUGE_HISTOGRAM
		}
		g := b.group(fam, dt, m)
		if g.Histogram == nil {
			g.Histogram = &dto.Histogram{}
		}
		switch suffix {
		case "_bucket":
			ub, err := strconv.ParseFloat(le, 64)
			if err != nil {
				ub = math.NaN() // histogramFromDTO reports it
			}
			g.Histogram.Bucket = append(g.Histogram.Bucket, &dto.Bucket{UpperBound: proto.Float64(ub), CumulativeCountFloat: proto.Float64(v)})
		case "_count", "_gcount":
			g.Histogram.SampleCountFloat = proto.Float64(v)
		case "_sum", "_gsum":
			g.Histogram.SampleSum = proto.Float64(v)
		}
	case model.MetricTypeSummary:
		g := b.group(fam, dto.MetricType_SUMMARY, m)
		if g.Summary == nil {
			g.Summary = &dto.Summary{}
		}
		switch suffix {
		case "":
			q, _ := strconv.ParseFloat(quantile, 64)
			g.Summary.Quantile = append(g.Summary.Quantile, &dto.Quantile{Quantile: proto.Float64(q), Value: proto.Float64(v)})
		case "_count":
			g.Summary.SampleCount = proto.Uint64(uint64(max(v, 0)))
		case "_sum":
			g.Summary.SampleSum = proto.Float64(v)
		}
	default: // unknown, stateset, or undeclared
		mf := b.family(name, dto.MetricType_UNTYPED)
		m.Untyped = &dto.Untyped{Value: proto.Float64(v)}
		mf.Metric = append(mf.Metric, m)
	}
}

// group returns the histogram or summary series of fam with m's labels,
// adding it on first sight.
func (b *omBuilder) group(fam string, t dto.MetricType, m *dto.Metric) *dto.Metric {
	key := fam + "\xff" + labelKey(m)
	if g, ok := b.grouped[key]; ok {
		return g
	}
	mf := b.family(fam, t)
	mf.Metric = append(mf.Metric, m)
	b.grouped[key] = m
	return m
}
