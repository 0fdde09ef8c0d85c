package collector

import (
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
	p := textparse.NewOpenMetricsParser(body, labels.NewSymbolTable(), textparse.WithOMParserSTSeriesSkipped())
	b := omBuilder{families: map[string]*dto.MetricFamily{}, types: map[string]model.MetricType{}, grouped: map[string]*dto.Metric{}}
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parsing OpenMetrics exposition: %w", err)
		}
		switch entry {
		case textparse.EntryType:
			name, t := p.Type()
			b.types[string(name)] = t
		case textparse.EntrySeries:
			var ls labels.Labels
			p.Labels(&ls)
			_, ts, v := p.Series()
			b.add(ls, ts, v)
		}
	}
	return b.families, nil
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
	for _, suffix := range []string{"_total", "_bucket", "_count", "_sum", "_gcount", "_gsum", "_info"} {
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
