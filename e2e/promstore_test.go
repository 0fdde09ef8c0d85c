package e2e

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"

	"github.com/kneewatch/kneewatch/internal/promstore"
)

// seriesStore is what a Prometheus server would hold after scraping; the
// PromQL engine reads it exactly as in a server (see internal/promstore).
type seriesStore struct{ *promstore.Store }

func newSeriesStore() *seriesStore { return &seriesStore{promstore.New()} }

// addScrape stores a parsed exposition as scraped at at, with the scrape
// job's target labels added.
func (s *seriesStore) addScrape(families map[string]*dto.MetricFamily, at time.Time, target map[string]string) {
	if err := s.AddScrape(families, at, target); err != nil {
		panic(err) // a test's own series out of order: a bug in the test
	}
}

// newEngine is Prometheus's PromQL engine with a server's defaults.
func newEngine(t *testing.T) *promql.Engine {
	ng := promstore.NewEngine()
	t.Cleanup(func() { _ = ng.Close() })
	return ng
}

// instantQuery evaluates expr at at, as a rule evaluation would.
func instantQuery(t *testing.T, ng *promql.Engine, q storage.Queryable, expr string, at time.Time) promql.Vector {
	t.Helper()
	v, err := promstore.Instant(ng, q, expr, at)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
