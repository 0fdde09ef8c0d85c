package workload

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func draw(g *Generator, n int) []Request {
	out := make([]Request, n)
	for i := range out {
		out[i] = g.Next()
	}
	return out
}

func TestMixGeneratorIsDeterministicPerSeed(t *testing.T) {
	a, err := Resolve("chat", 42)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Resolve("chat", 42)
	c, _ := Resolve("chat", 43)
	seqA, seqB, seqC := draw(a, 100), draw(b, 100), draw(c, 100)
	if diff := cmp.Diff(seqA, seqB); diff != "" {
		t.Errorf("same seed, different sequences:\n%s", diff)
	}
	if cmp.Equal(seqA, seqC) {
		t.Error("seeds 42 and 43 gave the same sequence")
	}
	if diff := cmp.Diff(draw(a.WithSeed(43), 100), seqC); diff != "" {
		t.Errorf("WithSeed(43) differs from a fresh seed-43 generator:\n%s", diff)
	}
}

func TestTraceGeneratorReplaysInOrderAndCycles(t *testing.T) {
	g, err := Resolve("testdata/trace.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	// The trace spans 2 s over 4 records: one mean gap is 2s/3, so the second
	// cycle starts 2s + 666.666666ms after the first.
	period := 2*time.Second + 2*time.Second/3
	want := []Request{
		{812, 95, 0}, {120, 240, 250 * ms}, {2048, 12, 1500 * ms}, {64, 1, 2000 * ms},
		{812, 95, period}, {120, 240, period + 250*ms},
	}
	if diff := cmp.Diff(want, draw(g, 6)); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[:2], draw(g.WithSeed(9), 2)); diff != "" {
		t.Errorf("WithSeed on a trace should restart the replay (-want +got):\n%s", diff)
	}
	info := g.Info()
	if info.TraceRecords != 4 || info.MeanPromptTokens != (812+120+2048+64)/4.0 || info.MeanOutputTokens != (95+240+12+1)/4.0 {
		t.Errorf("Info() = %+v, want 4 records, mean prompt 761, mean output 87 (0 counted as 1)", info)
	}
}

func TestResolveFindsPresetsMixFilesAndTraces(t *testing.T) {
	tests := []struct {
		spec       string
		wantName   string
		meanPrompt float64
	}{
		{"chat", "chat", 199.3},
		{"testdata/mix.yaml", "mix", 383.2},
		{"testdata/azure.csv", "azure", (374 + 396 + 879 + 91 + 91 + 4808) / 6.0},
		{"testdata/untimed.jsonl", "untimed", 15},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			g, err := Resolve(tt.spec, 1)
			if err != nil {
				t.Fatal(err)
			}
			info := g.Info()
			if info.Mix.Name != tt.wantName || info.Source != tt.spec {
				t.Errorf("name %q source %q, want %q and %q", info.Mix.Name, info.Source, tt.wantName, tt.spec)
			}
			if d := info.MeanPromptTokens - tt.meanPrompt; d > 0.1 || d < -0.1 {
				t.Errorf("mean prompt %.2f, want %.1f", info.MeanPromptTokens, tt.meanPrompt)
			}
			if r := g.Next(); r.PromptTokens < 1 || r.OutputTokens < 1 {
				t.Errorf("drew %+v, want positive token counts", r)
			}
		})
	}
}

func TestResolveRejectsAnUnknownSpec(t *testing.T) {
	_, err := Resolve("chatt", 1)
	want := `workload "chatt": not a preset (chat, code, long-context, rag, summarize) nor a .yaml/.yml mix file or .jsonl/.csv trace`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	_, err = Resolve("testdata/nope.yaml", 1)
	if err == nil || err.Error() != "reading workload mix: open testdata/nope.yaml: no such file or directory" {
		t.Errorf("missing file: got %v", err)
	}
}

// A blend draws about its share from the other mix, and the same seed
// draws the same trace.
func TestBlendDrawsItsShareFromTheOtherMix(t *testing.T) {
	chat, _ := Preset("chat")
	rag, _ := Preset("rag")
	tr := Blend(chat, rag, 0.2, 4000, 7)
	long := 0
	for _, r := range tr.Records {
		if r.PromptTokens >= rag.Prompt.Min {
			long++
		}
	}
	// rag's prompts are ≥ 1500 tokens; chat's rarely are (lognormal, median 133).
	if share := float64(long) / float64(len(tr.Records)); share < 0.17 || share > 0.25 {
		t.Errorf("%.3f of the blend's prompts are RAG-long, want about 0.2", share)
	}
	if again := Blend(chat, rag, 0.2, 4000, 7); again.Records[123] != tr.Records[123] || again.Source != "chat+20%rag" {
		t.Errorf("the same seed drew a different blend (source %q)", again.Source)
	}
}
