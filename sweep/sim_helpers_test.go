package sweep

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/workload"
)

// simTarget is one in-process simulated replica with its DCGM endpoint.
type simTarget struct {
	fleet  *sim.Fleet
	preset sim.Preset
	url    string // OpenAI base URL
	engine string // engine /metrics
	dcgm   string
}

// startSim starts a one-replica simulated fleet on loopback; the test stops it.
func startSim(t testing.TB, presetName string, speed float64) simTarget {
	t.Helper()
	p, err := sim.LoadPreset(presetName)
	if err != nil {
		t.Fatal(err)
	}
	return startSimPreset(t, p, speed)
}

func startSimPreset(t testing.TB, p sim.Preset, speed float64) simTarget {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f, err := sim.StartFleet(ctx, sim.FleetConfig{Listen: "127.0.0.1:0", DCGMListen: "127.0.0.1:0", Preset: p, Speed: speed, ShutdownGrace: time.Second})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		f.Close()
	})
	r := f.Replicas()[0]
	return simTarget{fleet: f, preset: p, url: r.OpenAIBaseURL, engine: r.MetricsURL, dcgm: f.DCGMURL()}
}

// client returns a sweep client for the simulated replica.
func (s simTarget) client(maxConns int) *Client {
	return &Client{
		BaseURL: s.url, Model: s.preset.Model, Stream: true,
		HTTP: NewHTTPClient(maxConns),
	}
}

// metrics reads the replica's engine and GPU metrics.
func (s simTarget) metrics(interval time.Duration) *Metrics {
	return &Metrics{
		Scraper:   collector.NewScraper(nil, collector.ScrapeLimits{Timeout: 5 * time.Second}),
		EngineURL: s.engine, DCGMURL: s.dcgm, Interval: interval,
	}
}

// scaled divides an SLO's thresholds by speed, as a K-times-faster GPU
// divides every latency by K.
func scaled(slo knee.SLO, speed float64) knee.SLO {
	return knee.SLO{
		TTFT:     knee.Duration(time.Duration(float64(slo.TTFT) / speed)),
		TPOT:     knee.Duration(time.Duration(float64(slo.TPOT) / speed)),
		Quantile: slo.Quantile,
	}
}

func resolve(t testing.TB, spec string) *workload.Generator {
	t.Helper()
	g, err := workload.Resolve(spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("SWEEP_VERBOSE") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

// countTokens is the simulator's token count, the rule prompts are sized by.
func countTokens(s string) int { return workload.CountTokens(s) }

func resolveChat() *workload.Generator {
	g, err := workload.Resolve("chat", 1)
	if err != nil {
		panic(err) // a built-in preset always resolves
	}
	return g
}

func newScraper() *collector.Scraper {
	return collector.NewScraper(nil, collector.ScrapeLimits{Timeout: 5 * time.Second})
}
