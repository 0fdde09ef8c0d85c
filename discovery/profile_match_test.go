package discovery

import (
	"testing"

	"github.com/kneewatch/kneewatch/knee"
)

func TestMatchProfile(t *testing.T) {
	tests := []struct {
		name               string
		model, gpu, engine string
		want               string
		wantErr            string
	}{
		{name: "a model with one profile gets it", model: "qwen", want: "qwen"},
		{name: "the GPU picks among a model's profiles, across DCGM and node-label spellings", model: "llama", gpu: "NVIDIA-A100-SXM4-80GB", want: "llama-a100"},
		{name: "the GPU comparison ignores case", model: "llama", gpu: "nvidia h100 80gb hbm3", want: "llama-h100"},
		{name: "a different engine rules a profile out", model: "llama", gpu: "NVIDIA H100 80GB HBM3", engine: "sglang",
			wantErr: `no profile matches model "llama" on GPU "NVIDIA H100 80GB HBM3"`},
		{name: "an unknown GPU with two GPU-specific profiles is ambiguous", model: "llama",
			wantErr: `profiles llama-a100, llama-h100 all match model "llama" (GPU unknown); name one with the profile label or annotation`},
		{name: "a model without profiles has none", model: "mistral", wantErr: `no profile matches model "mistral" (GPU unknown)`},
		{name: "a GPU no profile names rules out GPU-specific profiles", model: "llama", gpu: "NVIDIA-L4",
			wantErr: `no profile matches model "llama" on GPU "NVIDIA-L4"`},
		{name: "a GPU-agnostic profile fits any GPU", model: "qwen", gpu: "NVIDIA-L4", want: "qwen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := matchProfile(testProfiles(), tt.model, tt.gpu, tt.engine)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("matchProfile = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestMatchProfilePrefersTheKnownGPU(t *testing.T) {
	profiles := testProfiles()
	profiles["llama-any"] = &knee.Profile{Match: knee.Match{Model: "llama"}}
	tests := []struct {
		name, gpu, want, wantErr string
	}{
		{name: "a profile for the pod's GPU beats a GPU-agnostic one", gpu: "NVIDIA-H100-80GB-HBM3", want: "llama-h100"},
		{name: "a GPU no profile names falls back to the GPU-agnostic one", gpu: "NVIDIA-L4", want: "llama-any"},
		{name: "an unknown GPU cannot choose between the agnostic and the specific ones",
			wantErr: `profiles llama-a100, llama-any, llama-h100 all match model "llama" (GPU unknown); name one with the profile label or annotation`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := matchProfile(profiles, "llama", tt.gpu, "")
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("matchProfile = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
