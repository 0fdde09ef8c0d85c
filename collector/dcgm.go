package collector

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// GPULabels identify one GPU as dcgm-exporter labels it. Pod, Namespace and
// Container are set when the exporter maps GPUs to Kubernetes pods.
type GPULabels struct {
	GPU       string `json:"gpu,omitempty"` // index on the host
	UUID      string `json:"uuid,omitempty"`
	PCIBusID  string `json:"pci_bus_id,omitempty"`
	Device    string `json:"device,omitempty"`
	ModelName string `json:"model_name,omitempty"`
	Hostname  string `json:"hostname,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Container string `json:"container,omitempty"`
}

// GPUSnapshot is one GPU's readings at one scrape, in base units: ratios
// 0..1, bytes, watts, hertz. A field the exporter does not report, or
// reports as a DCGM sentinel, is absent.
type GPUSnapshot struct {
	Labels GPULabels          `json:"labels"`
	Gauges map[Signal]float64 `json:"gauges"`
}

// DCGMSnapshot is one dcgm-exporter scrape.
type DCGMSnapshot struct {
	Time     time.Time     `json:"time"`
	GPUs     []GPUSnapshot `json:"gpus"`
	Problems []Problem     `json:"problems,omitempty"`
}

// GPUSelector picks a replica's GPUs out of a DCGM scrape. Empty fields
// match anything; an all-empty selector matches every GPU.
type GPUSelector struct {
	UUID      string
	Pod       string
	Namespace string
}

// Matches reports whether the GPU's labels satisfy every set field.
func (sel GPUSelector) Matches(l GPULabels) bool {
	return (sel.UUID == "" || sel.UUID == l.UUID) &&
		(sel.Pod == "" || sel.Pod == l.Pod) &&
		(sel.Namespace == "" || sel.Namespace == l.Namespace)
}

// Select returns the GPUs the selector matches.
func (d DCGMSnapshot) Select(sel GPUSelector) []GPUSnapshot {
	var out []GPUSnapshot
	for _, g := range d.GPUs {
		if sel.Matches(g.Labels) {
			out = append(out, g)
		}
	}
	return out
}

// dcgmFields lists the dcgm-exporter fields read, with the factor to base
// units (docs/upstream-metrics.md §6: GPU_UTIL is 0–100, FB is MiB, clocks MHz;
// the PROF fields are already ratios).
var dcgmFields = []struct {
	name   string
	signal Signal
	scale  float64
}{
	{"DCGM_FI_DEV_GPU_UTIL", SignalGPUUtilization, 0.01},
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", SignalGPUEngineActive, 1},
	{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", SignalGPUTensorActive, 1},
	{"DCGM_FI_PROF_DRAM_ACTIVE", SignalGPUDRAMActive, 1},
	{"DCGM_FI_DEV_POWER_USAGE", SignalGPUPowerWatts, 1},
	{"DCGM_FI_DEV_FB_USED", SignalGPUMemoryUsedBytes, 1 << 20},
	{"DCGM_FI_DEV_FB_FREE", SignalGPUMemoryFreeBytes, 1 << 20},
	{"DCGM_FI_DEV_SM_CLOCK", SignalGPUSMClockHertz, 1e6},
}

// dcgmSentinelFloor is the smallest DCGM "blank" value: DCGM marks a field
// it cannot read with values at or just above 0x7ffffff0 (int32),
// 2^47 (fp64) or 0x7ffffffffffffff0 (int64, e.g. 9223372036854775794 for
// "not supported"). No field read here legitimately reaches 2^31, so
// anything from the int32 blank up is a sentinel.
const dcgmSentinelFloor = 0x7ffffff0

// ErrNoDCGM means a scrape carries no dcgm-exporter field.
var ErrNoDCGM = errors.New("no DCGM_FI_* metrics")

// NormalizeDCGM reads a dcgm-exporter scrape into one GPUSnapshot per GPU
// (per GPU and pod, when time-slicing maps one GPU to several pods).
// DCGMSnapshot.Time is left for the caller.
func NormalizeDCGM(families map[string]*dto.MetricFamily) (DCGMSnapshot, error) {
	return normalizeDCGM(families, false)
}

// normalizeDCGM is NormalizeDCGM where skippedDCGM says a DCGM_FI_ family
// was in the scrape though not among families (the stream parser keeps
// only the fields read).
func normalizeDCGM(families map[string]*dto.MetricFamily, skippedDCGM bool) (DCGMSnapshot, error) {
	var d DCGMSnapshot
	found := skippedDCGM
	byKey := map[GPULabels]*GPUSnapshot{}
	for name := range families {
		if strings.HasPrefix(name, dcgmPrefix) {
			found = true
			break
		}
	}
	if !found {
		return d, ErrNoDCGM
	}
	for _, f := range dcgmFields {
		mf := families[f.name]
		if mf == nil {
			continue
		}
		if key, dup := duplicateSeries(mf); dup {
			d.Problems = append(d.Problems, Problem{Metric: f.name, Kind: ProblemDuplicateSeries, Signal: f.signal,
				Reason: fmt.Sprintf("series {%s} appears more than once; dropped", CapLabel(key))})
			continue
		}
		for _, m := range mf.GetMetric() {
			v, ok := scalarValue(mf.GetType(), m)
			labels := gpuLabels(m)
			switch {
			case !ok:
				d.Problems = append(d.Problems, Problem{Metric: f.name, Kind: ProblemWrongType, Signal: f.signal, Reason: fmt.Sprintf("is a %s, expected a gauge", strings.ToLower(mf.GetType().String()))})
				continue
			case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
				d.Problems = append(d.Problems, Problem{Metric: f.name, Kind: ProblemNonFinite, Signal: f.signal, Reason: fmt.Sprintf("gpu %s has value %v; dropped", CapLabel(gpuName(labels)), v)})
				continue
			case v >= dcgmSentinelFloor:
				d.Problems = append(d.Problems, Problem{Metric: f.name, Kind: ProblemDCGMSentinel, Signal: f.signal, Reason: fmt.Sprintf("gpu %s reports DCGM sentinel %s (blank or not supported); dropped", CapLabel(gpuName(labels)), strconv.FormatFloat(v, 'f', 0, 64))})
				continue
			}
			g := byKey[labels]
			if g == nil {
				g = &GPUSnapshot{Labels: labels, Gauges: map[Signal]float64{}}
				byKey[labels] = g
			}
			g.Gauges[f.signal] = v * f.scale
		}
	}
	for _, g := range byKey {
		d.GPUs = append(d.GPUs, *g)
	}
	slices.SortFunc(d.GPUs, func(a, b GPUSnapshot) int {
		x, y := a.Labels, b.Labels
		return cmp.Or(
			cmp.Compare(x.Hostname, y.Hostname),
			cmp.Compare(len(x.GPU), len(y.GPU)), // numeric order for indexes
			cmp.Compare(x.GPU, y.GPU),
			cmp.Compare(x.UUID, y.UUID),
			cmp.Compare(x.Namespace, y.Namespace),
			cmp.Compare(x.Pod, y.Pod),
			cmp.Compare(x.Container, y.Container),
		)
	})
	return d, nil
}

func gpuName(l GPULabels) string {
	if l.UUID != "" {
		return l.UUID
	}
	return l.Hostname + "/" + l.GPU
}

// gpuLabels reads the identifying labels, accepting both the released
// "Hostname" and the newer "hostname" spelling, and the pre-2.0
// pod_name/pod_namespace/container_name spellings.
func gpuLabels(m *dto.Metric) GPULabels {
	var l GPULabels
	for _, lp := range m.GetLabel() {
		v := lp.GetValue()
		switch lp.GetName() {
		case "gpu":
			l.GPU = v
		case "UUID", "uuid":
			l.UUID = v
		case "pci_bus_id":
			l.PCIBusID = v
		case "device":
			l.Device = v
		case "modelName":
			l.ModelName = v
		case "Hostname", "hostname":
			l.Hostname = v
		case "pod", "pod_name":
			l.Pod = v
		case "namespace", "pod_namespace":
			l.Namespace = v
		case "container", "container_name":
			l.Container = v
		}
	}
	return l
}

// gpuAggregates says how AttachGPUs folds per-GPU readings into a replica
// gauge: ratios and clocks are averaged, power and memory summed.
var gpuAggregates = []struct {
	signal Signal
	mean   bool
}{
	{SignalGPUUtilization, true},
	{SignalGPUEngineActive, true},
	{SignalGPUTensorActive, true},
	{SignalGPUDRAMActive, true},
	{SignalGPUPowerWatts, false},
	{SignalGPUMemoryUsedBytes, false},
	{SignalGPUMemoryFreeBytes, false},
	{SignalGPUSMClockHertz, true},
}

// AttachGPUs stores the replica's GPUs in the snapshot and sets the GPU
// gauges from them. A GPU listed once per pod (time-slicing) counts once.
// A gauge is set only when every GPU reports it: a sum or mean over some
// of the GPUs would be a wrong number, not a partial one.
func (s *Snapshot) AttachGPUs(gpus []GPUSnapshot) {
	s.GPUs = gpus
	if s.Gauges == nil {
		s.Gauges = map[Signal]float64{}
	}
	seen := map[string]bool{}
	var unique []GPUSnapshot
	for _, g := range gpus {
		id := gpuName(g.Labels)
		if seen[id] {
			continue
		}
		seen[id] = true
		unique = append(unique, g)
	}
	if len(unique) == 0 {
		return
	}
	for _, agg := range gpuAggregates {
		var sum float64
		all := true
		for _, g := range unique {
			v, ok := g.Gauges[agg.signal]
			if !ok {
				all = false
				break
			}
			sum += v
		}
		if !all {
			continue
		}
		if agg.mean {
			sum /= float64(len(unique))
		}
		s.Gauges[agg.signal] = sum
	}
}
