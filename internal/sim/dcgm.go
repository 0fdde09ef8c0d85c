package sim

import (
	"crypto/sha256"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DCGMLabels are the node- and pod-level labels of the simulated
// dcgm-exporter, running with Kubernetes pod mapping. Empty fields take the
// defaults in parentheses.
type DCGMLabels struct {
	Hostname      string // Hostname label ("kneewatch-sim")
	DriverVersion string // DCGM_FI_DRIVER_VERSION label ("580.95.05")
	Namespace     string // namespace label ("default")
	Container     string // container label ("vllm")
}

func (l DCGMLabels) withDefaults() DCGMLabels {
	if l.Hostname == "" {
		l.Hostname = "kneewatch-sim"
	}
	if l.DriverVersion == "" {
		l.DriverVersion = "580.95.05"
	}
	if l.Namespace == "" {
		l.Namespace = "default"
	}
	if l.Container == "" {
		l.Container = "vllm"
	}
	return l
}

// DCGMGPU is one simulated GPU: the replica running on it and the pod
// name dcgm-exporter would attribute it to.
type DCGMGPU struct {
	Replica *Replica
	// Pod is the pod label; empty means the replica's name.
	Pod string
}

// dcgmLabelNames is the label set of every series, as in
// fixtures/dcgm-*.prom (dcgm-exporter with --kubernetes).
var dcgmLabelNames = []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname",
	"DCGM_FI_DRIVER_VERSION", "container", "namespace", "pod", "pod_uid"}

// gpuReading is one GPU's derived values at scrape time.
type gpuReading struct {
	act                        gpuActivity
	totalMiB, usedMiB, freeMiB float64
	reservedMiB                float64
	powerW, energyMJ           float64
	smClockMHz, memClockMHz    float64
	gpuTempC, memTempC         float64
	pcieTxBytes, pcieRxBytes   float64
	gpuUtilPct, memCopyUtilPct float64
}

// dcgmField is one exported DCGM field: name, HELP and TYPE as
// dcgm-exporter prints them (etc/default-counters.csv), and its value.
type dcgmField struct {
	name, help string
	counter    bool
	value      func(g *gpuReading) float64
}

func dcgmZero(*gpuReading) float64 { return 0 }

// dcgmFields are dcgm-exporter's default counters, in its order.
var dcgmFields = []dcgmField{
	{"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", false, func(g *gpuReading) float64 { return g.smClockMHz }},
	{"DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", false, func(g *gpuReading) float64 { return g.memClockMHz }},
	{"DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature (in C).", false, func(g *gpuReading) float64 { return g.memTempC }},
	{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", false, func(g *gpuReading) float64 { return g.gpuTempC }},
	{"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", false, func(g *gpuReading) float64 { return g.powerW }},
	{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", true, func(g *gpuReading) float64 { return g.energyMJ }},
	{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "Total number of PCIe retries.", true, dcgmZero},
	{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", false, func(g *gpuReading) float64 { return g.gpuUtilPct }},
	{"DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", false, func(g *gpuReading) float64 { return g.memCopyUtilPct }},
	{"DCGM_FI_DEV_ENC_UTIL", "Encoder utilization (in %).", false, dcgmZero},
	{"DCGM_FI_DEV_DEC_UTIL", "Decoder utilization (in %).", false, dcgmZero},
	{"DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", false, dcgmZero},
	{"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", false, func(g *gpuReading) float64 { return g.freeMiB }},
	{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", false, func(g *gpuReading) float64 { return g.usedMiB }},
	{"DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB).", false, func(g *gpuReading) float64 { return g.reservedMiB }},
	{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for uncorrectable errors", true, dcgmZero},
	{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for correctable errors", true, dcgmZero},
	{"DCGM_FI_DEV_ROW_REMAP_FAILURE", "Whether remapping of rows has failed", false, dcgmZero},
	{"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "Total number of NVLink bandwidth counters for all lanes.", true, dcgmZero},
	{"DCGM_FI_DEV_VGPU_LICENSE_STATUS", "vGPU License status", false, dcgmZero},
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.", false, func(g *gpuReading) float64 { return g.act.kernel }},
	{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active.", false, func(g *gpuReading) float64 { return g.act.compute }},
	{"DCGM_FI_PROF_DRAM_ACTIVE", "Ratio of cycles the device memory interface is active sending or receiving data.", false, func(g *gpuReading) float64 { return g.act.memory }},
	{"DCGM_FI_PROF_PCIE_TX_BYTES", "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", false, func(g *gpuReading) float64 { return g.pcieTxBytes }},
	{"DCGM_FI_PROF_PCIE_RX_BYTES", "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", false, func(g *gpuReading) float64 { return g.pcieRxBytes }},
}

// fbReservedShare is the framebuffer share the driver reserves (the fixture
// shows 457 MiB of a 20 GiB card; ~0.5% on larger ones).
const fbReservedShare = 0.005

// reading derives a GPU's DCGM values from its replica's activity. Power
// rises from idle to TDP with activity, compute-bound work drawing more than
// memory-bound work; the SM clock drops by the slowdown factor (throttling);
// vLLM preallocates gpu_memory_utilization of the framebuffer at start, so
// FB_USED is flat.
func reading(s gpuSample) gpuReading {
	p, a := s.preset, s.activity
	g := gpuReading{act: a}
	g.totalMiB = math.Floor(p.GPUMemoryBytes / mib)
	g.reservedMiB = math.Round(g.totalMiB * fbReservedShare)
	g.usedMiB = math.Round(g.totalMiB * p.GPUMemoryUtilization)
	g.freeMiB = math.Max(g.totalMiB-g.usedMiB-g.reservedMiB, 0)

	dynamic := math.Max(p.TDPWatts-p.IdleWatts, 0)
	load := 0.6*a.kernel + 0.4*a.compute
	g.powerW = p.IdleWatts + dynamic*load
	joules := p.IdleWatts*a.uptime.Seconds() + dynamic*(0.6*a.totalKernel.Seconds()+0.4*a.totalCompute.Seconds())
	g.energyMJ = math.Round(joules * 1000)

	slowdown := math.Max(s.slowdown, 1)
	g.smClockMHz = math.Round(p.SMClockMHz / slowdown)
	g.memClockMHz = memClockMHz(p.GPU)
	g.gpuTempC = math.Round(30 + 45*load)
	g.memTempC = math.Round(32 + 40*load)
	g.gpuUtilPct = math.Round(a.busy * 100)
	g.memCopyUtilPct = math.Round(a.memory * 100)
	// Streaming tokens in and out is a trickle over PCIe; scale a token-era
	// baseline with activity so the series moves with load.
	g.pcieTxBytes = math.Round(2e6 + 40e6*a.busy)
	g.pcieRxBytes = math.Round(1e6 + 25e6*a.busy)
	return g
}

// memClockMHz is the fixed memory clock of the preset GPUs (nvidia-smi's
// max memory clock), 2619 MHz (H100's HBM3) for others.
func memClockMHz(gpu string) float64 {
	switch gpu {
	case "NVIDIA L4":
		return 6251
	case "NVIDIA H200":
		return 3201
	default:
		return 2619
	}
}

// dcgmCollector turns every GPU's latest activity into const metrics at
// scrape time.
type dcgmCollector struct {
	labels DCGMLabels
	gpus   []DCGMGPU
	descs  []*prometheus.Desc
	xid    *prometheus.Desc
}

func newDCGMCollector(labels DCGMLabels, gpus []DCGMGPU) *dcgmCollector {
	c := &dcgmCollector{labels: labels.withDefaults(), gpus: gpus}
	for _, f := range dcgmFields {
		names := dcgmLabelNames
		if f.name == "DCGM_FI_DEV_XID_ERRORS" {
			names = append(append([]string(nil), dcgmLabelNames...), "err_code", "err_msg")
		}
		c.descs = append(c.descs, prometheus.NewDesc(f.name, f.help, names, nil))
	}
	return c
}

func (c *dcgmCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *dcgmCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	for i, gpu := range c.gpus {
		g := reading(gpu.Replica.gpuSample(now))
		labels := c.gpuLabels(i, gpu)
		for j, f := range dcgmFields {
			typ := prometheus.GaugeValue
			if f.counter {
				typ = prometheus.CounterValue
			}
			values := labels
			if f.name == "DCGM_FI_DEV_XID_ERRORS" {
				values = append(append([]string(nil), labels...), "0", "No Error")
			}
			ch <- prometheus.MustNewConstMetric(c.descs[j], typ, f.value(&g), values...)
		}
	}
}

// gpuLabels are the label values of GPU i, in dcgmLabelNames order. The
// UUID is derived from the host and replica names, so it is stable across
// runs.
func (c *dcgmCollector) gpuLabels(i int, gpu DCGMGPU) []string {
	pod := gpu.Pod
	if pod == "" {
		pod = gpu.Replica.Name()
	}
	h := sha256.Sum256([]byte(c.labels.Hostname + "/" + gpu.Replica.Name()))
	uuid := fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
	return []string{
		strconv.Itoa(i), uuid, fmt.Sprintf("00000000:%02X:00.0", 0x18+i), "nvidia" + strconv.Itoa(i),
		gpu.Replica.Preset().GPU, c.labels.Hostname, c.labels.DriverVersion,
		c.labels.Container, c.labels.Namespace, pod, "",
	}
}

// NewDCGMHandler serves one dcgm-exporter-style /metrics for the given
// GPUs (GPU i is gpus[i]), on its own registry.
func NewDCGMHandler(labels DCGMLabels, gpus []DCGMGPU) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(newDCGMCollector(labels, gpus)); err != nil {
		return nil, err
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}), nil
}
