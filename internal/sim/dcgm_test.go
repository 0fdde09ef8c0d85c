package sim

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The fixture is a real dcgm-exporter scrape (GPU Operator v25.10.0, pod
// mapping on), copied from /work/shared/fixtures; see SOURCES.md there.
const dcgmFixture = "testdata/dcgm-gpu-operator-fixture.prom"

func labelNames(m *dto.Metric) []string {
	var out []string
	for _, lp := range m.GetLabel() {
		out = append(out, lp.GetName())
	}
	slices.Sort(out)
	return out
}

func TestDCGMEndpointMatchesTheFixturesFamiliesAndLabels(t *testing.T) {
	raw, err := os.Open(dcgmFixture)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fixture, err := p.TextToMetricFamilies(raw)
	if err != nil {
		t.Fatal(err)
	}
	f := startFleet(t, FleetConfig{Replicas: 2, DCGMListen: "127.0.0.1:0"})
	got := scrape(t, f.DCGMURL())

	for name, want := range fixture {
		mf, ok := got[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if mf.GetHelp() != want.GetHelp() || mf.GetType() != want.GetType() {
			t.Errorf("%s: HELP %q TYPE %v, want dcgm-exporter's %q %v", name, mf.GetHelp(), mf.GetType(), want.GetHelp(), want.GetType())
		}
		if len(mf.GetMetric()) != 2 {
			t.Errorf("%s: %d series, want one per GPU (2)", name, len(mf.GetMetric()))
			continue
		}
		for _, m := range mf.GetMetric() {
			if diff := cmp.Diff(labelNames(want.GetMetric()[0]), labelNames(m)); diff != "" {
				t.Errorf("%s label names (-fixture +got):\n%s", name, diff)
			}
		}
	}
	if len(got) != len(fixture) {
		t.Errorf("%d families, the fixture has %d", len(got), len(fixture))
	}

	// Each replica is one GPU, attributed to its pod.
	var gpus [][2]string
	for _, m := range got["DCGM_FI_DEV_GPU_UTIL"].GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		gpus = append(gpus, [2]string{l["gpu"] + " " + l["device"] + " " + l["pod"] + " " + l["namespace"], l["modelName"]})
	}
	slices.SortFunc(gpus, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	want := [][2]string{{"0 nvidia0 sim-0 default", "NVIDIA H100 80GB HBM3"}, {"1 nvidia1 sim-1 default", "NVIDIA H100 80GB HBM3"}}
	if diff := cmp.Diff(want, gpus); diff != "" {
		t.Errorf("GPUs (-want +got):\n%s", diff)
	}
}

func TestDCGMValuesFollowTheEngine(t *testing.T) {
	f := startFleet(t, FleetConfig{DCGMListen: "127.0.0.1:0"})
	url, p := f.Replicas()[0].URL, h100(t)
	get := func(mfs map[string]*dto.MetricFamily, name string) float64 { return value(t, mfs, name, nil) }

	idle := scrape(t, f.DCGMURL())
	fb := get(idle, "DCGM_FI_DEV_FB_USED") + get(idle, "DCGM_FI_DEV_FB_FREE") + get(idle, "DCGM_FI_DEV_FB_RESERVED")
	wantFB := float64(int(p.GPUMemoryBytes / mib))
	if fb != wantFB {
		t.Errorf("FB used+free+reserved = %v MiB, want the GPU's %v MiB", fb, wantFB)
	}
	if used := get(idle, "DCGM_FI_DEV_FB_USED") / wantFB; used < 0.89 || used > 0.91 {
		t.Errorf("FB_USED is %.3f of the GPU, want ≈ gpu_memory_utilization 0.9 (vLLM preallocates)", used)
	}
	if u, w := get(idle, "DCGM_FI_DEV_GPU_UTIL"), get(idle, "DCGM_FI_DEV_POWER_USAGE"); u != 0 || w != p.IdleWatts {
		t.Errorf("idle GPU: util %v%%, power %v W; want 0%% and the idle %v W", u, w, p.IdleWatts)
	}

	if raceEnabled {
		t.Skip("wall-clock busy shares need the driver at full speed; the race detector slows it too much")
	}
	// Keep the replica busy decoding a large batch for over a second.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	for range 64 {
		wg.Go(func() { streamSSE(ctx, http.DefaultClient, url+"/v1/completions", completionBody(20, 5000, true)) })
	}
	time.Sleep(1200 * time.Millisecond)
	busy := scrape(t, f.DCGMURL())
	cancel()

	util := get(busy, "DCGM_FI_DEV_GPU_UTIL")
	gr := get(busy, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
	tensor := get(busy, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")
	dram := get(busy, "DCGM_FI_PROF_DRAM_ACTIVE")
	power := get(busy, "DCGM_FI_DEV_POWER_USAGE")
	t.Logf("busy: GPU_UTIL %v%%, GR_ENGINE %.3f, TENSOR %.3f, DRAM %.3f, power %.0f W", util, gr, tensor, dram, power)
	if util < 80 || util > 100 {
		t.Errorf("GPU_UTIL %v%% while decoding 64 requests back to back, want 80–100", util)
	}
	if !(gr > 0.5 && gr <= util/100) {
		t.Errorf("GR_ENGINE_ACTIVE %v, want above 0.5 and at most GPU_UTIL/100 (step overhead is not kernel time)", gr)
	}
	if !(dram > tensor && tensor > 0) {
		t.Errorf("decode is memory-bound: want DRAM_ACTIVE %v > PIPE_TENSOR_ACTIVE %v > 0", dram, tensor)
	}
	if !(power > p.IdleWatts+0.3*(p.TDPWatts-p.IdleWatts) && power <= p.TDPWatts) {
		t.Errorf("power %v W under load, want well above idle %v W and at most TDP %v W", power, p.IdleWatts, p.TDPWatts)
	}
	if e0, e1 := get(idle, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), get(busy, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"); !(e1 > e0) {
		t.Errorf("energy counter went from %v to %v mJ, want it to grow", e0, e1)
	}
}
