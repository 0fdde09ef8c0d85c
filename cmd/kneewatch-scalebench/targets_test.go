package main

import (
	"bytes"
	"math"
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

func TestAFitOverTwoSizesIsTheLineThroughThem(t *testing.T) {
	f := fitLine([]float64{100, 1000}, []float64{0.05, 0.5})
	if math.Abs(f.at(5000)-2.5) > 1e-12 {
		t.Errorf("line through (100, 0.05) and (1000, 0.5) at 5000 = %v, want 2.5", f.at(5000))
	}
	f = fitLine([]float64{100, 1000, 5000}, []float64{10, 100, 500})
	if math.Abs(f.intercept) > 1e-9 || math.Abs(f.slope-0.1) > 1e-12 {
		t.Errorf("fit of a proportional series = %+v, want slope 0.1 through 0", f)
	}
}

func TestValuesAreWrittenAsPythonsReprWritesThem(t *testing.T) {
	for v, want := range map[float64]string{431802: "431802.0", 103.335895: "103.335895", 0: "0.0", -1: "-1.0",
		1.7e9: "1700000000.0", 1e16: "1e+16", 0.00001: "1e-05", 0.0001: "0.0001"} {
		if got := pythonFloat(v); got != want {
			t.Errorf("pythonFloat(%v) = %q, want %q (Python's repr)", v, got, want)
		}
	}
}
