package watch

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/internal/testtools"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixtureTime stands in for the scrape time of the engines' fixtures.
var fixtureTime = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// readFixture reads one of the engines' captured expositions, which live
// with the adapters that parse them (collector/testdata).
func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testtools.ModuleRoot(), "collector", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// normalizeText parses a text exposition and normalizes it as the adapters
// do; the collector's own tests check that the scrape path agrees.
func normalizeText(t testing.TB, text string, opts collector.Options) collector.Snapshot {
	t.Helper()
	families, err := collector.ParseText(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	s, err := collector.Normalize(families, opts)
	if err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	return s
}
