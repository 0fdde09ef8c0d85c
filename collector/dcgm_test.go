package collector

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestDCGMNormalization(t *testing.T) {
	d, err := NormalizeDCGM(parseString(t, readFixture(t, "dcgm-lke-ai-conformance-gpu-operator-k8s.prom")))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.GPUs) != 1 {
		t.Fatalf("%d GPUs, want 1", len(d.GPUs))
	}
	g := d.GPUs[0]
	tests := []struct {
		name string
		sig  Signal
		want float64
	}{
		{"framebuffer free is converted from MiB to bytes", SignalGPUMemoryFreeBytes, 20015 * 1024 * 1024},
		{"framebuffer used is converted from MiB to bytes", SignalGPUMemoryUsedBytes, 1 * 1024 * 1024},
		{"SM clock is converted from MHz to Hz", SignalGPUSMClockHertz, 2310e6},
		{"power stays in watts", SignalGPUPowerWatts, 40.979},
		{"graphics engine active stays a ratio", SignalGPUEngineActive, 0.004656},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := g.Gauges[tt.sig]; !ok || got != tt.want {
				t.Errorf("%s = %v (present %v), want %v", tt.sig, got, ok, tt.want)
			}
		})
	}
	want := GPULabels{GPU: "0", UUID: "GPU-a8394b51-c086-568a-9f1a-c1e1c934c44c", PCIBusID: "00000000:00:02.0", Device: "nvidia0",
		ModelName: "NVIDIA RTX 4000 Ada Generation", Hostname: "lke529760-766837-0a634ab30000", Pod: "cuda-75454ffb9f-8ljq7",
		Namespace: "default", Container: "cuda"}
	if diff := cmp.Diff(want, g.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}

func TestDCGMEdgeCases(t *testing.T) {
	const text = `# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",hostname="node-1"} 87
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b",hostname="node-1"} 9223372036854775794
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a",hostname="node-1"} 300
DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-b",hostname="node-1"} 18446744073709551615
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-a",hostname="node-1"} 1410
DCGM_FI_DEV_SM_CLOCK{gpu="1",UUID="GPU-b",hostname="node-1"} 1380
`
	d, err := NormalizeDCGM(parseString(t, text))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("utilization is converted from percent to a ratio", func(t *testing.T) {
		if got := d.GPUs[0].Gauges[SignalGPUUtilization]; got != 0.87 {
			t.Errorf("GPU-a utilization = %v, want 0.87", got)
		}
	})
	t.Run("the lowercase hostname label is read", func(t *testing.T) {
		if d.GPUs[0].Labels.Hostname != "node-1" {
			t.Errorf("hostname = %q", d.GPUs[0].Labels.Hostname)
		}
	})
	t.Run("sentinel values are dropped with a problem each", func(t *testing.T) {
		if _, ok := d.GPUs[1].Gauges[SignalGPUUtilization]; ok {
			t.Error("sentinel utilization kept")
		}
		if _, ok := d.GPUs[1].Gauges[SignalGPUPowerWatts]; ok {
			t.Error("sentinel power kept")
		}
		if len(d.Problems) != 2 || !strings.Contains(d.Problems[0].Reason, "DCGM sentinel 9223372036854775808") {
			t.Errorf("problems = %v, want two sentinel problems", d.Problems)
		}
	})
	t.Run("replica aggregates are set only when every GPU reports the field", func(t *testing.T) {
		var s Snapshot
		s.AttachGPUs(d.GPUs)
		if _, ok := s.Gauge(SignalGPUUtilization); ok {
			t.Error("utilization aggregated although GPU-b has none")
		}
		if got, _ := s.Gauge(SignalGPUSMClockHertz); got != 1395e6 {
			t.Errorf("mean SM clock = %v, want 1395e6", got)
		}
	})
}

func TestAttachGPUsCountsATimeSlicedGPUOnce(t *testing.T) {
	gpu := func(pod string, util, watts float64) GPUSnapshot {
		return GPUSnapshot{
			Labels: GPULabels{GPU: "0", UUID: "GPU-a", Pod: pod, Namespace: "serving"},
			Gauges: map[Signal]float64{SignalGPUUtilization: util, SignalGPUPowerWatts: watts},
		}
	}
	other := GPUSnapshot{Labels: GPULabels{GPU: "1", UUID: "GPU-b"}, Gauges: map[Signal]float64{SignalGPUUtilization: 0.5, SignalGPUPowerWatts: 100}}
	s := NewSnapshot("vllm")
	s.AttachGPUs([]GPUSnapshot{gpu("p1", 0.9, 300), gpu("p2", 0.9, 300), other})
	want := map[Signal]float64{SignalGPUUtilization: 0.7, SignalGPUPowerWatts: 400}
	if diff := cmp.Diff(want, s.Gauges, cmpopts.EquateApprox(1e-12, 0)); diff != "" {
		t.Errorf("gauges (-want +got):\n%s", diff)
	}
	if len(s.GPUs) != 3 {
		t.Errorf("kept %d GPUs, want all 3", len(s.GPUs))
	}
}

func TestGPUSelector(t *testing.T) {
	l := GPULabels{UUID: "GPU-a", Pod: "p", Namespace: "n"}
	tests := []struct {
		name string
		sel  GPUSelector
		want bool
	}{
		{"an empty selector matches any GPU", GPUSelector{}, true},
		{"a UUID selector matches that GPU", GPUSelector{UUID: "GPU-a"}, true},
		{"a UUID selector rejects another GPU", GPUSelector{UUID: "GPU-b"}, false},
		{"pod and namespace must both match", GPUSelector{Pod: "p", Namespace: "other"}, false},
		{"pod and namespace matching select the GPU", GPUSelector{Pod: "p", Namespace: "n"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.sel.Matches(l); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
}
