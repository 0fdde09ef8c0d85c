package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/internal/testtools"
)

// TestServedExpositionsAdvanceAndStayValid renders each fixture twice, the
// second time grown, and reads both with kneewatch's own parser and
// adapter: counters advance, gauges stay, histograms stay valid, so the
// bench scrapes what a busy replica serves.
func TestServedExpositionsAdvanceAndStayValid(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join(testtools.ModuleRoot(), "collector", "testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			e, err := parseExposition(body)
			if err != nil {
				t.Fatal(err)
			}
			snap := func(growth float64) collector.Snapshot {
				var buf bytes.Buffer
				e.render(&buf, growth)
				fams, err := collector.ParseText(&buf)
				if err != nil {
					t.Fatalf("growth %g: %v", growth, err)
				}
				s, err := collector.Normalize(fams, collector.Options{})
				if err != nil {
					t.Fatalf("growth %g: %v", growth, err)
				}
				return s
			}
			a, b := snap(1), snap(1.5)
			if len(a.Counters) == 0 {
				t.Fatal("the fixture has no counters kneewatch reads")
			}
			for sig, v := range a.Counters {
				if w := b.Counters[sig]; v > 0 && w <= v {
					t.Errorf("counter %v did not advance: %g then %g", sig, v, w)
				}
			}
			for sig, v := range a.Gauges {
				if w := b.Gauges[sig]; w != v {
					t.Errorf("gauge %v changed: %g then %g", sig, v, w)
				}
			}
		})
	}
}
