package detection

import (
	"bytes"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/kneewatch/kneewatch/collector"
)

// scrapeRegistry is what a scraper reads from g's /metrics: the text
// exposition, parsed back as kneewatch's scraper parses it. The round trip
// matters: the text format spells out the +Inf bucket that gathered
// histograms leave implicit, and kneewatch's adapters (like Prometheus)
// only ever see the text.
func scrapeRegistry(g prometheus.Gatherer) (map[string]*dto.MetricFamily, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, fmt.Errorf("gathering: %w", err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return nil, fmt.Errorf("encoding %s: %w", mf.GetName(), err)
		}
	}
	return collector.ParseText(&buf)
}
