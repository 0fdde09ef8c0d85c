package sim

import (
	"context"
	"testing"

	"github.com/kneewatch/kneewatch/workload"
)

// BenchmarkStep measures one engine step in a closed loop at concurrency
// 256 with the chat mix on 8B/H100 (the largest batch max_num_seqs allows).
func BenchmarkStep(b *testing.B) {
	p, _ := LoadPreset("llama-3.1-8b-h100")
	g, _ := workload.Resolve("chat", 1)
	e, err := NewEngine(Config{Preset: p})
	if err != nil {
		b.Fatal(err)
	}
	now := epoch
	var id uint64
	submit := func() {
		w := g.Next()
		id++
		if err := e.Submit(&Request{ID: id, PromptTokens: w.PromptTokens, MaxTokens: w.OutputTokens, Arrival: now}); err != nil {
			b.Fatal(err)
		}
	}
	for range 256 {
		submit()
	}
	for range 2000 { // reach steady state before timing
		res := e.Step(now)
		now = res.End
		for range res.Finished {
			submit()
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res := e.Step(now)
		now = res.End
		for range res.Finished {
			submit()
		}
	}
}

// BenchmarkRunLevel256 measures a whole closed-loop level at concurrency 256:
// 768 warm-up and 4096 measured chat requests.
func BenchmarkRunLevel256(b *testing.B) {
	p, _ := LoadPreset("llama-3.1-8b-h100")
	g, _ := workload.Resolve("chat", 1)
	for b.Loop() {
		lv, err := RunLevel(context.Background(), LevelConfig{Engine: Config{Preset: p}, Workload: g.WithSeed(1), Concurrency: 256, SLO: chatSLO})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(lv.Window)), "requests/op")
	}
}
