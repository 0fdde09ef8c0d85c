package sim

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// Preset describes one simulated replica: the model it serves, the GPU it
// runs on, the roofline cost model and the vLLM scheduler limits. Every field
// can be overridden from YAML (see Override and OverrideFile).
type Preset struct {
	// Name is the preset's own name, e.g. "llama-3.1-8b-h100".
	Name string `yaml:"name"`
	// Model is the served model name, as /v1/models and model_name labels show it.
	Model string `yaml:"model"`
	// GPU is the DCGM modelName of the GPU, e.g. "NVIDIA H100 80GB HBM3".
	GPU string `yaml:"gpu"`

	// Parameters is the model's parameter count; compute per token is 2× this.
	Parameters float64 `yaml:"parameters"`
	// WeightBytes are read from HBM once per engine step.
	WeightBytes float64 `yaml:"weight_bytes"`
	// KVBytesPerToken is the KV-cache size of one token over all layers (K and
	// V) at 16-bit precision: 2 × layers × KV heads × head dim × 2 bytes.
	KVBytesPerToken float64 `yaml:"kv_bytes_per_token"`
	// KVCacheDtype is how the KV cache is stored (vLLM's --kv-cache-dtype):
	// "auto" (empty), "bf16" or "fp16" keep KVBytesPerToken; "fp8" halves it.
	KVCacheDtype string `yaml:"kv_cache_dtype,omitempty"`

	// GPUMemoryBytes is the GPU's total framebuffer.
	GPUMemoryBytes float64 `yaml:"gpu_memory_bytes"`
	// HBMBandwidth is the memory bandwidth in bytes per second.
	HBMBandwidth float64 `yaml:"hbm_bandwidth_bytes_per_second"`
	// PeakFLOPS is the dense tensor throughput for the weight dtype, FLOP/s.
	PeakFLOPS float64 `yaml:"peak_flops"`
	// ComputeEfficiency is the achieved share of PeakFLOPS (model FLOPs utilisation), 0..1.
	ComputeEfficiency float64 `yaml:"compute_efficiency"`
	// MemoryEfficiency is the achieved share of HBMBandwidth, 0..1.
	MemoryEfficiency float64 `yaml:"memory_efficiency"`
	// StepOverhead is the fixed cost of every engine step (scheduling, sampling,
	// kernel launches) that neither compute nor memory explains.
	StepOverhead time.Duration `yaml:"step_overhead"`

	// GPUMemoryUtilization is vLLM's --gpu-memory-utilization, 0..1.
	GPUMemoryUtilization float64 `yaml:"gpu_memory_utilization"`
	// ActivationReserveBytes is memory kept for activations and non-torch
	// allocations, outside both weights and KV cache.
	ActivationReserveBytes float64 `yaml:"activation_reserve_bytes"`
	// BlockSize is tokens per KV block (vLLM's --block-size).
	BlockSize int `yaml:"block_size"`
	// MaxNumSeqs caps running requests (vLLM's --max-num-seqs).
	MaxNumSeqs int `yaml:"max_num_seqs"`
	// MaxNumBatchedTokens caps tokens per step (vLLM's --max-num-batched-tokens).
	MaxNumBatchedTokens int `yaml:"max_num_batched_tokens"`
	// MaxModelLen caps prompt plus output tokens of one request (vLLM's --max-model-len).
	MaxModelLen int `yaml:"max_model_len"`

	// TDPWatts is the board power limit; DCGM power follows utilisation up to it.
	TDPWatts float64 `yaml:"tdp_watts"`
	// IdleWatts is the power drawn with the model loaded and no work.
	IdleWatts float64 `yaml:"idle_watts"`
	// SMClockMHz is the SM clock under load, as DCGM_FI_DEV_SM_CLOCK reports it.
	SMClockMHz float64 `yaml:"sm_clock_mhz"`
}

// Byte sizes used by the presets.
const (
	kib = 1024
	mib = 1024 * kib
	gib = 1024 * mib
)

// presets are the built-in replicas. GPU figures are dense datasheet values and
// KV sizes follow from the model architecture (see docs/calibration.md §1–2).
//
// The efficiencies and the step overhead are fitted to the published 8B/H100
// figures, the same for every preset (TestCalibrationAgainstPublishedFigures
// prints the table):
//   - memory 0.92 of HBM bandwidth plus 0.35 ms per step puts a lone 8B
//     request on an H100 at 5.6 ms/token (16.06 GB ÷ 3.08 TB/s + 0.35 ms):
//     within 30% of every published single-stream figure for 8B on one
//     H100 (NIM 4.37 and 4.63 ms, vLLM 0.21 6.48 ms, vLLM CI 7.8 ms at
//     batch 8), whose common band is 5.46–5.68 ms;
//   - compute 0.40 of the dense peak is a whole-step utilisation (attention,
//     sampling and scheduling included). It puts the closed-loop plateau of
//     a 200-in/200-out mix at ~12k output tok/s (NIM 8B: 13.3k and 10.4k),
//     flattening past c≈150, and a lone 2048-token prefill at ~25k prompt
//     tok/s (docs/calibration.md §1 derives 25–37k at 40–60% MFU).
//
// KVCacheDtype says how the KV cache is stored: the 70B FP8 preset serves
// with an FP8 KV cache, as FP8 deployments usually do, which halves its
// bytes per token.
var presets = map[string]Preset{
	"llama-3.1-8b-h100": {
		Name:       "llama-3.1-8b-h100",
		Model:      "meta-llama/Llama-3.1-8B-Instruct",
		GPU:        "NVIDIA H100 80GB HBM3",
		Parameters: 8.03e9,
		// BF16 weights ≈ 16.06 GB.
		WeightBytes:     16.06e9,
		KVBytesPerToken: 2 * 32 * 8 * 128 * 2, // K+V × layers × KV heads × head dim × bf16 = 128 KiB
		// docs/calibration.md §2 takes ≈79.2 GiB as usable on an 80 GB H100.
		GPUMemoryBytes:         79.2 * gib,
		HBMBandwidth:           3.35e12,
		PeakFLOPS:              989e12,
		ComputeEfficiency:      0.40,
		MemoryEfficiency:       0.92,
		StepOverhead:           350 * time.Microsecond,
		GPUMemoryUtilization:   0.90,
		ActivationReserveBytes: 2 * gib,
		BlockSize:              16,
		MaxNumSeqs:             256,
		MaxNumBatchedTokens:    8192,
		MaxModelLen:            131072,
		TDPWatts:               700,
		IdleWatts:              90,
		SMClockMHz:             1980,
	},
	"llama-3.1-8b-l4": {
		Name:                   "llama-3.1-8b-l4",
		Model:                  "meta-llama/Llama-3.1-8B-Instruct",
		GPU:                    "NVIDIA L4",
		Parameters:             8.03e9,
		WeightBytes:            16.06e9,
		KVBytesPerToken:        2 * 32 * 8 * 128 * 2,
		GPUMemoryBytes:         24e9, // datasheet: 24 GB GDDR6
		HBMBandwidth:           300e9,
		PeakFLOPS:              121e12,
		ComputeEfficiency:      0.40,
		MemoryEfficiency:       0.92,
		StepOverhead:           350 * time.Microsecond,
		GPUMemoryUtilization:   0.90,
		ActivationReserveBytes: 1 * gib,
		BlockSize:              16,
		MaxNumSeqs:             256,
		// A small GPU: a smaller batch budget keeps prefill steps short.
		MaxNumBatchedTokens: 2048,
		// Only ~34k tokens of KV fit beside the weights, so the context is capped.
		MaxModelLen: 16384,
		TDPWatts:    72,
		IdleWatts:   16,
		SMClockMHz:  2040,
	},
	"llama-3.3-70b-fp8-h200": {
		Name:       "llama-3.3-70b-fp8-h200",
		Model:      "meta-llama/Llama-3.3-70B-Instruct",
		GPU:        "NVIDIA H200",
		Parameters: 70.6e9,
		// FP8 weights ≈ 70.5 GB on one GPU, with an FP8 KV cache.
		WeightBytes:            70.5e9,
		KVBytesPerToken:        2 * 80 * 8 * 128 * 2, // 320 KiB at 16 bits
		KVCacheDtype:           KVCacheFP8,           // 160 KiB stored
		GPUMemoryBytes:         139.8 * gib,          // docs/calibration.md §2: ≈139.8 GiB usable on an H200
		HBMBandwidth:           4.8e12,
		PeakFLOPS:              1979e12, // dense FP8
		ComputeEfficiency:      0.40,
		MemoryEfficiency:       0.92,
		StepOverhead:           350 * time.Microsecond,
		GPUMemoryUtilization:   0.90,
		ActivationReserveBytes: 4 * gib,
		BlockSize:              16,
		MaxNumSeqs:             256,
		MaxNumBatchedTokens:    8192,
		MaxModelLen:            131072,
		TDPWatts:               700,
		IdleWatts:              100,
		SMClockMHz:             1980,
	},
}

// The KV-cache dtypes a preset accepts.
const (
	KVCacheAuto = "auto"
	KVCacheBF16 = "bf16"
	KVCacheFP16 = "fp16"
	KVCacheFP8  = "fp8"
)

// KVCacheBytesPerToken is what one token of context occupies in the KV
// cache, after its dtype.
func (p Preset) KVCacheBytesPerToken() float64 {
	if p.KVCacheDtype == KVCacheFP8 {
		return p.KVBytesPerToken / 2
	}
	return p.KVBytesPerToken
}

// PresetNames lists the built-in presets, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LoadPreset returns a built-in preset by name.
func LoadPreset(name string) (Preset, error) {
	p, ok := presets[name]
	if !ok {
		return Preset{}, fmt.Errorf("unknown simulator preset %q (known: %v)", name, PresetNames())
	}
	return p, nil
}

// Override decodes YAML over p: fields present in the document replace p's,
// unknown keys are errors (with their line), and the result is validated.
// source names the document in errors (a file path, or "override"). Errors
// are strictyaml's: "source: line N: field: message".
func (p Preset) Override(r io.Reader, source string) (Preset, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Preset{}, fmt.Errorf("%s: %w", source, err)
	}
	doc := strictyaml.Doc{Source: source, Data: data, Want: "simulator preset", EmptyOK: true}
	out := p
	if err := doc.Decode(&out); err != nil {
		return Preset{}, err
	}
	if fe := out.validate(); fe != nil {
		return Preset{}, doc.Locate(fe)
	}
	return out, nil
}

// OverrideFile is Override with a YAML file, e.g. the file given to
// `--preset-file` on top of `--preset`.
func (p Preset) OverrideFile(path string) (Preset, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Preset{}, fmt.Errorf("reading preset override: %w", err)
	}
	return p.Override(bytes.NewReader(b), path)
}

// Validate reports the first field that makes the preset unusable, by its
// YAML name: `preset "llama-3.1-8b-h100": compute_efficiency: must be at most 1, got 1.5`.
func (p Preset) Validate() error {
	if fe := p.validate(); fe != nil {
		return fmt.Errorf("preset %q: %w", p.Name, fe)
	}
	return nil
}

// validate is Validate's rules, the first broken one as a FieldError (which
// Override locates in its document).
func (p Preset) validate() *strictyaml.FieldError {
	positive := []presetField{
		{"parameters", p.Parameters},
		{"weight_bytes", p.WeightBytes},
		{"kv_bytes_per_token", p.KVBytesPerToken},
		{"gpu_memory_bytes", p.GPUMemoryBytes},
		{"hbm_bandwidth_bytes_per_second", p.HBMBandwidth},
		{"peak_flops", p.PeakFLOPS},
		{"compute_efficiency", p.ComputeEfficiency},
		{"memory_efficiency", p.MemoryEfficiency},
		{"gpu_memory_utilization", p.GPUMemoryUtilization},
		{"block_size", float64(p.BlockSize)},
		{"max_num_seqs", float64(p.MaxNumSeqs)},
		{"max_num_batched_tokens", float64(p.MaxNumBatchedTokens)},
		{"max_model_len", float64(p.MaxModelLen)},
	}
	// !(v > 0) also catches NaN.
	if fe := firstBad(positive, func(v float64) bool { return !(v > 0) }, "must be > 0"); fe != nil {
		return fe
	}
	shares := []presetField{
		{"compute_efficiency", p.ComputeEfficiency},
		{"memory_efficiency", p.MemoryEfficiency},
		{"gpu_memory_utilization", p.GPUMemoryUtilization},
	}
	if fe := firstBad(shares, func(v float64) bool { return v > 1 }, "must be at most 1"); fe != nil {
		return fe
	}
	switch p.KVCacheDtype {
	case "", KVCacheAuto, KVCacheBF16, KVCacheFP16, KVCacheFP8:
	default:
		return strictyaml.Errorf("kv_cache_dtype", "must be one of auto, bf16, fp16, fp8, got %q", p.KVCacheDtype)
	}
	if p.StepOverhead < 0 {
		return strictyaml.Errorf("step_overhead", "must not be negative, got %v", p.StepOverhead)
	}
	optional := []presetField{
		{"activation_reserve_bytes", p.ActivationReserveBytes},
		{"tdp_watts", p.TDPWatts},
		{"idle_watts", p.IdleWatts},
		{"sm_clock_mhz", p.SMClockMHz},
	}
	if fe := firstBad(optional, func(v float64) bool { return v < 0 }, "must not be negative"); fe != nil {
		return fe
	}
	if p.Model == "" {
		return strictyaml.Errorf("model", "must be set")
	}
	blocks := p.KVBlocks()
	if blocks <= 0 {
		// Four fields share the blame; gpu_memory_utilization is the one a
		// vLLM user turns to make room, so the error is filed under it.
		return strictyaml.Errorf("gpu_memory_utilization", "leaves no room for a KV cache: gpu_memory_bytes × gpu_memory_utilization (%.3g) − weight_bytes (%.3g) − activation_reserve_bytes (%.3g) is not positive",
			p.GPUMemoryBytes*p.GPUMemoryUtilization, p.WeightBytes, p.ActivationReserveBytes)
	}
	if need := (p.MaxModelLen + p.BlockSize - 1) / p.BlockSize; need > blocks {
		return strictyaml.Errorf("max_model_len", "%d needs %d KV blocks but only %d fit (%d tokens); lower max_model_len",
			p.MaxModelLen, need, blocks, blocks*p.BlockSize)
	}
	return nil
}

// presetField is a numeric preset field by its YAML name, for validate's
// range checks.
type presetField struct {
	name string
	v    float64
}

// firstBad is a FieldError "<name>: <want>, got <v>" for the first field
// whose value is bad, or nil.
func firstBad(fields []presetField, bad func(float64) bool, want string) *strictyaml.FieldError {
	for _, f := range fields {
		if bad(f.v) {
			return strictyaml.Errorf(f.name, "%s, got %v", want, f.v)
		}
	}
	return nil
}

// KVBlocks is the KV-cache capacity in blocks, as vLLM sizes it:
// floor((GPU memory × gpu_memory_utilization − weights − activation reserve) ÷ (KV cache bytes per token × block size)).
func (p Preset) KVBlocks() int {
	free := p.GPUMemoryBytes*p.GPUMemoryUtilization - p.WeightBytes - p.ActivationReserveBytes
	per := p.KVCacheBytesPerToken() * float64(p.BlockSize)
	if free <= 0 || per <= 0 {
		return 0
	}
	return int(free / per)
}
