package detection

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kneewatch/kneewatch/internal/sim"
)

// gpuSampleWindow is the period DCGM_FI_DEV_GPU_UTIL averages over, as
// NVML's utilization sample period of about a second (and as the
// simulator's DCGM endpoint does).
const gpuSampleWindow = time.Second

// dcgmMetrics is dcgm-exporter's view of the replica's GPU in virtual time:
// DCGM_FI_DEV_GPU_UTIL (0–100), the share of the last second in which an
// engine step ran, with dcgm-exporter's Kubernetes label set.
type dcgmMetrics struct {
	reg   *prometheus.Registry
	util  prometheus.Gauge
	spans []span // steps that ended within the sample window
}

type span struct{ start, end time.Time }

func newDCGMMetrics(p sim.Preset, pod string) *dcgmMetrics {
	m := &dcgmMetrics{reg: prometheus.NewRegistry()}
	m.util = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "DCGM_FI_DEV_GPU_UTIL", Help: "GPU utilization (in %).",
		ConstLabels: prometheus.Labels{
			"gpu": "0", "UUID": "GPU-bench-0", "pci_bus_id": "00000000:00:00.0", "device": "nvidia0",
			"modelName": p.GPU, "Hostname": "bench-node", "DCGM_FI_DRIVER_VERSION": "580.95.05",
			"container": "vllm", "namespace": "default", "pod": pod, "pod_uid": "",
		},
	})
	m.reg.MustRegister(m.util)
	return m
}

// step remembers an engine step's span on the virtual clock.
func (m *dcgmMetrics) step(start, end time.Time) {
	cut := start.Add(-gpuSampleWindow)
	i := 0
	for i < len(m.spans) && m.spans[i].end.Before(cut) {
		i++
	}
	m.spans = append(m.spans[i:], span{start, end})
}

// sample sets the utilization gauge to the busy share of the window ending at now.
func (m *dcgmMetrics) sample(now time.Time) {
	from := now.Add(-gpuSampleWindow)
	var busy time.Duration
	for _, s := range m.spans {
		lo, hi := s.start, s.end
		if lo.Before(from) {
			lo = from
		}
		if hi.After(now) {
			hi = now
		}
		if hi.After(lo) {
			busy += hi.Sub(lo)
		}
	}
	m.util.Set(100 * min(float64(busy)/float64(gpuSampleWindow), 1))
}
