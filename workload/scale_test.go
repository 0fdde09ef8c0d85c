package workload

import (
	"math"
	"strings"
	"testing"
)

func TestScaleMultipliesTheMeansAndKeepsTheShape(t *testing.T) {
	for _, name := range PresetNames() {
		m, _ := Preset(name)
		s, err := m.Scale(2, 0.5, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Unclamped by a model length, a scaled distribution's mean scales
		// with it (rounding of the integer clamps aside).
		if got, want := s.MeanPromptTokens(), 2*m.MeanPromptTokens(); math.Abs(got/want-1) > 0.01 {
			t.Errorf("%s: mean prompt ×2 = %g, want %g", name, got, want)
		}
		if got, want := s.MeanOutputTokens(), 0.5*m.MeanOutputTokens(); math.Abs(got/want-1) > 0.01 {
			t.Errorf("%s: mean output ×0.5 = %g, want %g", name, got, want)
		}
		if s.Prompt.Kind != m.Prompt.Kind || s.Prompt.Sigma != m.Prompt.Sigma || s.Name != name+"×p2×o0.5" {
			t.Errorf("%s: scaled mix %+v changed the shape or is misnamed", name, s)
		}
	}
}

func TestScaleKeepsTheLongestRequestWithinTheModelLength(t *testing.T) {
	m, _ := Preset("long-context") // uniform 8–16k prompts, outputs up to 2048
	s, err := m.Scale(2, 2, 16384)
	if err != nil {
		t.Fatal(err)
	}
	if longest := s.Prompt.high(0) + s.Output.high(0); longest > 16384 {
		t.Errorf("longest request %d tokens (prompt %+v, output %+v), over max_model_len 16384", longest, s.Prompt, s.Output)
	}
	g, _ := NewMixGenerator(m, "long-context", 1)
	sg, err := g.Scaled(2, 2, 16384)
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		if r := sg.Next(); r.PromptTokens+r.OutputTokens > 16384 {
			t.Fatalf("drew %d + %d tokens, over max_model_len 16384", r.PromptTokens, r.OutputTokens)
		}
	}
}

func TestScaledTraceScalesEveryRecord(t *testing.T) {
	g, err := NewTraceGenerator(Trace{Source: "t", Records: []Record{{PromptTokens: 100, OutputTokens: 10}, {PromptTokens: 300, OutputTokens: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := g.Scaled(3, 2, 500)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := s.Next(), s.Next(); a.PromptTokens != 300 || a.OutputTokens != 20 || b.PromptTokens != 499 || b.OutputTokens != 1 {
		t.Errorf("scaled records %+v, %+v; want 300+20 and 499+1 (capped at max_model_len 500)", a, b)
	}
	// Without a model length, no scale takes a length past any context,
	// however large (past the largest int, a float converts to garbage).
	huge, err := g.Scaled(1e30, 1e5, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a := huge.Next(); a.PromptTokens != MaxRequestTokens || a.OutputTokens != 1_000_000 {
		t.Errorf("scaled ×1e30/×1e5: %+v, want %d+1000000", a, MaxRequestTokens)
	}
}

func TestScaleRejectsBadFactors(t *testing.T) {
	m, _ := Preset("chat")
	for _, f := range [][2]float64{{0, 1}, {1, -1}, {math.NaN(), 1}, {1, math.Inf(1)}} {
		if _, err := m.Scale(f[0], f[1], 0); err == nil || !strings.Contains(err.Error(), "scales must be finite and > 0") {
			t.Errorf("Scale(%v, %v) error = %v", f[0], f[1], err)
		}
	}
}
