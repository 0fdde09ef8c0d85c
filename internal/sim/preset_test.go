package sim

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEveryPresetIsValid(t *testing.T) {
	for _, name := range PresetNames() {
		p, err := LoadPreset(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if p.Name != name {
			t.Errorf("preset %q calls itself %q", name, p.Name)
		}
	}
	if len(PresetNames()) < 3 {
		t.Errorf("want at least three presets, got %v", PresetNames())
	}
}

func TestKVCapacityFollowsTheMemoryFormula(t *testing.T) {
	tests := []struct {
		preset string
		blocks int
	}{
		// (79.2 GiB × 0.9 − 16.06e9 − 2 GiB) ÷ (128 KiB × 16) = 27813.
		// docs/calibration.md estimates ≈ 27,000–28,000 blocks for vLLM on an H100.
		{"llama-3.1-8b-h100", 27813},
		// (24e9 × 0.9 − 16.06e9 − 1 GiB) ÷ 2 MiB = 2129: ≈ 34k tokens.
		{"llama-3.1-8b-l4", 2129},
		// (139.8 GiB × 0.9 − 70.5e9 − 4 GiB) ÷ (160 KiB (fp8 KV) × 16) = 23003.
		{"llama-3.3-70b-fp8-h200", 23003},
	}
	for _, tt := range tests {
		p, _ := LoadPreset(tt.preset)
		if got := p.KVBlocks(); got != tt.blocks {
			t.Errorf("%s: %d KV blocks, want %d", tt.preset, got, tt.blocks)
		}
	}
}

// An FP8 KV cache holds twice the tokens in the same memory, and attention
// reads half the bytes per token of context.
func TestFP8KVCacheHalvesTheBytesPerToken(t *testing.T) {
	base, _ := LoadPreset("llama-3.1-8b-h100")
	fp8, err := base.Override(strings.NewReader("kv_cache_dtype: fp8\n"), "override")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fp8.KVCacheBytesPerToken(), base.KVBytesPerToken/2; got != want {
		t.Errorf("fp8 KV cache: %v bytes per token, want %v", got, want)
	}
	if b, f := base.KVBlocks(), fp8.KVBlocks(); f < 2*b-1 || f > 2*b+1 {
		t.Errorf("fp8 KV cache: %d blocks, want about twice bf16's %d", f, b)
	}
	if fp8.cacheDtypeLabel() != "fp8" || base.cacheDtypeLabel() != "auto" {
		t.Errorf("cache_dtype labels %q and %q, want fp8 and auto", fp8.cacheDtypeLabel(), base.cacheDtypeLabel())
	}
}

func TestOverrideFileReplacesOnlyTheFieldsItNames(t *testing.T) {
	base, _ := LoadPreset("llama-3.1-8b-h100")
	p, err := base.OverrideFile("testdata/preset/override.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxNumSeqs != 512 || p.GPUMemoryUtilization != 0.8 || p.StepOverhead != 2*time.Millisecond {
		t.Errorf("overridden fields not applied: %+v", p)
	}
	want := base
	want.MaxNumSeqs, want.GPUMemoryUtilization, want.StepOverhead = 512, 0.8, 2*time.Millisecond
	if p != want {
		t.Errorf("override changed fields it does not name:\n got %+v\nwant %+v", p, want)
	}
}

func TestInvalidOverridesAreRejectedWithTheField(t *testing.T) {
	want := map[string]string{
		"invalid-unknown-key.yaml": `testdata/preset/invalid-unknown-key.yaml: line 2: max_num_sequences: unknown key "max_num_sequences" (did you mean "max_num_seqs"?); the keys here are ` +
			"activation_reserve_bytes, block_size, compute_efficiency, gpu, gpu_memory_bytes, gpu_memory_utilization, hbm_bandwidth_bytes_per_second, " +
			"idle_watts, kv_bytes_per_token, kv_cache_dtype, max_model_len, max_num_batched_tokens, max_num_seqs, memory_efficiency, model, name, " +
			"parameters, peak_flops, sm_clock_mhz, step_overhead, tdp_watts, weight_bytes",
		"invalid-efficiency.yaml": `testdata/preset/invalid-efficiency.yaml: line 1: compute_efficiency: must be at most 1, got 1.5`,
		// The two rules over several fields are filed under one of them
		// (max_model_len, gpu_memory_utilization); with that one not in
		// the file, no line is known.
		"invalid-no-kv-room.yaml":     `testdata/preset/invalid-no-kv-room.yaml: gpu_memory_utilization: leaves no room for a KV cache: gpu_memory_bytes × gpu_memory_utilization (1.53e+10) − weight_bytes (1.61e+10) − activation_reserve_bytes (2.15e+09) is not positive`,
		"invalid-model-len.yaml":      `testdata/preset/invalid-model-len.yaml: max_model_len: 131072 needs 8192 KV blocks but only 3483 fit (55728 tokens); lower max_model_len`,
		"invalid-kv-dtype.yaml":       `testdata/preset/invalid-kv-dtype.yaml: line 1: kv_cache_dtype: must be one of auto, bf16, fp16, fp8, got "int4"`,
		"invalid-type.yaml":           "testdata/preset/invalid-type.yaml: line 1: step_overhead: cannot unmarshal !!str `fast` into time.Duration",
		"invalid-negative-watts.yaml": "testdata/preset/invalid-negative-watts.yaml: line 2: idle_watts: must not be negative, got -5",
	}
	files, _ := filepath.Glob("testdata/preset/invalid-*.yaml")
	if len(files) != len(want) {
		t.Errorf("%d invalid fixtures, %d expected errors: keep them in step", len(files), len(want))
	}
	base, _ := LoadPreset("llama-3.1-8b-h100")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := base.OverrideFile(f)
			if w := want[filepath.Base(f)]; err == nil || err.Error() != w {
				t.Errorf("got:\n%v\nwant:\n%s", err, w)
			}
		})
	}
}

func TestLoadPresetNamesTheKnownOnes(t *testing.T) {
	_, err := LoadPreset("gpt-5-b200")
	if err == nil || !strings.Contains(err.Error(), `unknown simulator preset "gpt-5-b200" (known: [llama-3.1-8b-h100 llama-3.1-8b-l4 llama-3.3-70b-fp8-h200])`) {
		t.Errorf("got %v", err)
	}
}
