package detection

import (
	"context"
	"fmt"
	"maps"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/rules"
)

// DetectorOracle is the shipped page run on the true headroom.
const DetectorOracle = "oracle"

// oracleDetector is kneewatch's shipped page, evaluated exactly as the
// bench evaluates it, on a copy of kneewatch's /metrics whose headroom is
// the simulator's true headroom. Its misses and false pages are the rule's
// own; what the shipped page does beyond them comes from the inference.
func oracleDetector() Detector {
	return Detector{Key: DetectorOracle, Name: "oracle (page on true headroom)", Alerts: []string{rules.AlertHeadroomExhausted, rules.AlertPastKnee}, Shipped: true,
		Basis: "KneewatchHeadroomExhausted exactly as shipped, on kneewatch's /metrics with " + catalog.MetricReplicaHeadroom.Name +
			" replaced by the true headroom (same labels) in a store of its own"}
}

// oracle is the oracle's own Prometheus: a kneewatch job whose headroom
// series carries the truth, and the shipped rules evaluated over it.
type oracle struct {
	store  *store
	target *scrapeTarget
	// last is the headroom family kneewatch exported last, kept to write
	// the truth with the same labels at scrapes where kneewatch exported
	// none (its evaluation was not ok); lastRatios the knee load ratio
	// family, likewise, every dimension of which carries 1 - the truth.
	last, lastRatios *dto.MetricFamily
}

func newOracle() *oracle {
	st := newStore()
	return &oracle{store: st, target: newScrapeTarget(st, "job", "kneewatch", "instance", "kneewatch:9090")}
}

// scrape stores kneewatch's families at at with the headroom replaced by
// the true one.
func (o *oracle) scrape(at time.Time, kw map[string]*dto.MetricFamily, headroom float64) error {
	name := catalog.MetricReplicaHeadroom.Name
	fams := maps.Clone(kw)
	if f, ok := kw[name]; ok && len(f.GetMetric()) > 0 {
		o.last = f
	}
	if o.last != nil {
		fams[name] = withGauge(o.last, headroom)
	}
	ratios := catalog.MetricReplicaKneeLoad.Name
	if f, ok := kw[ratios]; ok && len(f.GetMetric()) > 0 {
		o.lastRatios = f
	}
	if o.lastRatios != nil {
		fams[ratios] = withGauge(o.lastRatios, 1-headroom)
	}
	if err := o.target.ingest(at, fams); err != nil {
		return fmt.Errorf("oracle: %w", err)
	}
	return nil
}

// withGauge is a copy of a gauge family with every series set to v.
func withGauge(f *dto.MetricFamily, v float64) *dto.MetricFamily {
	out := &dto.MetricFamily{Name: f.Name, Help: f.Help, Type: f.Type}
	for _, m := range f.GetMetric() {
		val := v
		out.Metric = append(out.Metric, &dto.Metric{Label: m.GetLabel(), Gauge: &dto.Gauge{Value: &val}})
	}
	return out
}

// score evaluates the shipped rules over the oracle's store and scores its page.
func (o *oracle) score(ctx context.Context, engine *promql.Engine, interval, length time.Duration, breaches []Episode, variants []PageVariant) ([]DetectorScore, error) {
	// Only the page and what it reads: the oracle scores nothing else.
	groups, err := shippedAlerts(oracleDetector().Alerts)
	if err != nil {
		return nil, err
	}
	detectors := []Detector{oracleDetector()}
	if len(variants) > 0 {
		// Each page what-if on the truth too: its misses and false pages
		// are the variant rule's own.
		g, err := variantRules(variants)
		if err != nil {
			return nil, err
		}
		groups = append(groups, g)
		for _, v := range variants {
			detectors = append(detectors, oracleVariantDetector(v))
		}
	}
	eval, err := newRuleEvaluator(engine, o.store, groups)
	if err != nil {
		return nil, fmt.Errorf("oracle: %w", err)
	}
	if err := eval.evalEvery(ctx, interval, length); err != nil {
		return nil, fmt.Errorf("oracle: %w", err)
	}
	return eval.scores(detectors, breaches, length), nil
}

// oracleVariantDetector is a page what-if evaluated on the true headroom.
func oracleVariantDetector(v PageVariant) Detector {
	d := variantDetector(v)
	d.Key = "oracle-" + v.Name
	d.Name = "oracle, " + v.Name
	return d
}
