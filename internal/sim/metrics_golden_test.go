package sim

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenPreset is fixed here, not loaded, so that tuning the built-in
// presets does not churn the golden expositions.
var goldenPreset = Preset{
	Name: "golden", Model: "golden-model", GPU: "NVIDIA H100 80GB HBM3",
	Parameters: 8e9, WeightBytes: 16e9, KVBytesPerToken: 131072,
	GPUMemoryBytes: 80e9, HBMBandwidth: 3.35e12, PeakFLOPS: 989e12,
	ComputeEfficiency: 0.4, MemoryEfficiency: 0.75, StepOverhead: 2 * time.Millisecond,
	GPUMemoryUtilization: 0.9, ActivationReserveBytes: 2e9, BlockSize: 16,
	MaxNumSeqs: 256, MaxNumBatchedTokens: 8192, MaxModelLen: 32768,
	TDPWatts: 700, IdleWatts: 90, SMClockMHz: 1980,
}

// TestIdleExpositionMatchesGolden pins every flavor's full /metrics of an
// idle replica — names, HELP, TYPE, labels and bucket edges — in
// testdata/metrics-<flavor>.golden.prom, the text a scraper reads.
func TestIdleExpositionMatchesGolden(t *testing.T) {
	for _, flavor := range MetricsFlavors() {
		t.Run(flavor, func(t *testing.T) {
			r, err := NewReplica(ReplicaConfig{Name: "golden-0", Preset: goldenPreset, MetricsFlavor: flavor})
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("Accept", "text/plain")
			r.Handler().ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d", rec.Code)
			}
			path := filepath.Join("testdata", "metrics-"+flavor+".golden.prom")
			if *update {
				if err := os.WriteFile(path, rec.Body.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), rec.Body.String()); diff != "" {
				t.Errorf("%s differs (-golden +got); rerun with -update if intended:\n%s", path, diff)
			}
		})
	}
}
