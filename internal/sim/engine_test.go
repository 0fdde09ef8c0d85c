package sim

import (
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// runAlone runs one request through a fresh engine to completion and returns it.
func runAlone(t *testing.T, p Preset, prompt, output int) *Request {
	t.Helper()
	e, err := NewEngine(Config{Preset: p})
	if err != nil {
		t.Fatal(err)
	}
	r := &Request{ID: 1, PromptTokens: prompt, MaxTokens: output, Arrival: epoch}
	if err := e.Submit(r); err != nil {
		t.Fatal(err)
	}
	now := epoch
	for !e.Idle() {
		now = e.Step(now).End
	}
	return r
}

func TestSingleRequestFiguresArePlausible(t *testing.T) {
	p, err := LoadPreset("llama-3.1-8b-h100")
	if err != nil {
		t.Fatal(err)
	}
	r := runAlone(t, p, 512, 128)
	tpot, ok := r.TPOT()
	if !ok {
		t.Fatal("no TPOT for a finished 128-token request")
	}
	// Public figures for an 8B model on one H100 put light-load decode at
	// 4.4–7.8 ms per token (docs/calibration.md §4; TestCalibrationAgainstPublishedFigures
	// holds the preset to each), above the 4.8 ms it takes to read the bf16
	// weights once, and a 512-token prefill well under 100 ms.
	if tpot < 4800*time.Microsecond || tpot > 8*time.Millisecond {
		t.Errorf("8B/H100 decode = %v per token, want 4.8–8ms", tpot)
	}
	if ttft := r.TTFT(); ttft <= 0 || ttft >= 100*time.Millisecond {
		t.Errorf("8B/H100 TTFT for a 512-token prompt = %v, want > 0 and well under 100ms", ttft)
	}
	if r.Generated != 128 {
		t.Errorf("generated %d tokens, want 128", r.Generated)
	}
	t.Logf("8B/H100 alone: TTFT(512 prompt) %v, TPOT %v", r.TTFT(), tpot)
}
