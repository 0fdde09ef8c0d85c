package collector

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/workload"
)

// complete sends one non-streaming completion (the sweep package has the
// full client, but it imports this package).
func complete(t *testing.T, baseURL, model, prompt string, maxTokens int) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt, "max_tokens": maxTokens, "ignore_eos": true})
	resp, err := http.Post(baseURL+"/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("completion: HTTP %d: %s", resp.StatusCode, b)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
}

// snapshotShape is what a flavor's snapshot must carry, independent of the
// values a real-time run produces: which engine and model the adapter saw,
// which signals it read and each histogram's bucket edges.
type snapshotShape struct {
	Engine     string               `json:"engine"`
	Model      string               `json:"model"`
	Gauges     []string             `json:"gauges"`
	Counters   []string             `json:"counters"`
	Histograms map[string][]float64 `json:"histograms"`
	Problems   []Problem            `json:"problems,omitempty"`
}

func shapeOf(s Snapshot) snapshotShape {
	sh := snapshotShape{Engine: s.Engine, Model: s.Model, Histograms: map[string][]float64{}, Problems: s.Problems}
	for sig := range s.Gauges {
		sh.Gauges = append(sh.Gauges, sig.String())
	}
	for sig := range s.Counters {
		sh.Counters = append(sh.Counters, sig.String())
	}
	for sig, h := range s.Histograms {
		var bounds []float64
		for _, b := range h.Buckets {
			if !isInf(b.UpperBound) {
				bounds = append(bounds, b.UpperBound)
			}
		}
		sh.Histograms[sig.String()] = bounds
	}
	slices.Sort(sh.Gauges)
	slices.Sort(sh.Counters)
	return sh
}

func isInf(f float64) bool { return f > 1e308 }

// TestSimulatorFlavorsNormalizeToTheExpectedSnapshot runs one simulated
// replica per --metrics-flavor, sends it a few requests, and checks that
// the adapters read the flavor into the expected snapshot shape (golden),
// with counters that moved.
func TestSimulatorFlavorsNormalizeToTheExpectedSnapshot(t *testing.T) {
	preset, err := sim.LoadPreset("llama-3.1-8b-h100")
	if err != nil {
		t.Fatal(err)
	}
	for _, flavor := range sim.MetricsFlavors() {
		t.Run(flavor, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			fleet, err := sim.StartFleet(ctx, sim.FleetConfig{Listen: "127.0.0.1:0", Preset: preset, Speed: 50, MetricsFlavor: flavor})
			if err != nil {
				t.Fatal(err)
			}
			defer fleet.Close()
			r := fleet.Replicas()[0]
			for range 3 {
				complete(t, r.OpenAIBaseURL, preset.Model, workload.PromptOfTokens(64), 8)
			}
			snap, err := NewScraper(nil, ScrapeLimits{}).Scrape(ctx, r.MetricsURL, Options{})
			if err != nil {
				t.Fatalf("scrape %s flavor: %v", flavor, err)
			}
			if g, ok := snap.Counter(SignalGenerationTokens); !ok || g < 24 {
				t.Errorf("generation tokens = %v (present %v), want ≥ 24 after three 8-token requests", g, ok)
			}
			got, err := json.MarshalIndent(shapeOf(snap), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "golden", "sim-"+flavor+".shape.json")
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if strings.TrimSpace(string(want)) != strings.TrimSpace(string(got)) {
				t.Errorf("%s flavor's snapshot shape differs from %s:\n%s", flavor, golden, got)
			}
		})
	}
}
