package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/sim"
)

// kneeCase is one must-show sweep: a simulator preset whose KV cache is
// made small (gpu_memory_utilization lowered) so the knee is where the KV
// cache fills, at a concurrency under sixteen, a long-prompt workload, and
// an SLO on TTFT. Why this shape:
//   - A KV-cache knee is a cliff: one request past it, requests wait for
//     cache and p99 TTFT doubles, so the knee does not move with the
//     milliseconds of scheduling noise a shared 2-core machine adds to
//     wall-clock latencies (a knee set by a slowly rising TPOT would).
//   - A knee under sixteen is reached by 1, 2, 4, 8, 16 and at most three
//     refinements: at most 8 levels.
//   - speed is chosen per preset so that one request at concurrency 1 takes
//     about 100 ms of wall time, which keeps each sweep near half a minute.
//
// The TTFT thresholds sit between the p99 TTFT at the true knee and one
// request past it (read off `kneewatch sim knee` for the same inputs).
type kneeCase struct {
	preset   string
	gmu      float64 // gpu_memory_utilization
	workload string
	ttft     time.Duration // SLO at speed 1; TPOT is left loose (2 s)
	speed    float64
}

var kneeCases = []kneeCase{
	{"llama-3.1-8b-h100", 0.27, "rag", 700 * time.Millisecond, 16},
	{"llama-3.1-8b-h100", 0.27, "summarize", 1900 * time.Millisecond, 30},
	{"llama-3.3-70b-fp8-h200", 0.58, "rag", 2400 * time.Millisecond, 40},
	{"llama-3.3-70b-fp8-h200", 0.58, "summarize", 5 * time.Second, 70},
}

func (kc kneeCase) slo() knee.SLO {
	return knee.SLO{TTFT: knee.Duration(kc.ttft), TPOT: knee.Duration(2 * time.Second), Quantile: 0.99}
}

func (kc kneeCase) simPreset(t *testing.T) sim.Preset {
	p, err := sim.LoadPreset(kc.preset)
	if err != nil {
		t.Fatal(err)
	}
	p.GPUMemoryUtilization = kc.gmu
	p.MaxModelLen = 16384 // what the smaller cache can hold
	return p
}

// fidelityTolerance bounds how far the simulator's wall-clock throughput may
// fall below its virtual-time truth before a run says nothing about the
// sweep: on an overloaded machine the simulator's driver loses its
// timeline, every latency stretches, and the knee moves for reasons that
// are not the sweep's.
const fidelityTolerance = 0.10

// TestSweepFindsTheSimulatorsTrueKnee is must-show 1: against the simulator
// over HTTP, the sweep's knee is within ±10% of sim.FindKnee's ground truth
// for the same preset, workload, SLO and speed, in at most 8 levels.
func TestSweepFindsTheSimulatorsTrueKnee(t *testing.T) {
	if testing.Short() {
		t.Skip("four sweeps against the simulator in wall time (about two minutes)")
	}
	var table []string
	for _, kc := range kneeCases {
		name := kc.preset + "/" + kc.workload
		t.Run(name, func(t *testing.T) {
			p := kc.simPreset(t)
			slo := scaled(kc.slo(), kc.speed)
			truth, err := sim.FindKnee(context.Background(), sim.KneeConfig{
				Engine: sim.Config{Preset: p, Speed: kc.speed}, Workload: resolve(t, kc.workload), SLO: slo, Seed: 1,
			})
			if err != nil {
				t.Fatal(err)
			}
			st := startSimPreset(t, p, kc.speed)
			start := time.Now()
			out, err := Run(context.Background(), Config{
				Client: st.client(64), Workload: resolve(t, kc.workload), Seed: 1, SLO: slo,
				MinRequests: 100, Metrics: st.metrics(100 * time.Millisecond), Logger: testLogger(t),
			})
			wall := time.Since(start)
			// A noisy machine can break the SLO even at concurrency 1; the
			// gates below tell that apart from a sweep that is wrong.
			if err != nil && (out == nil || !errors.Is(err, ErrSLOUnreachable)) {
				t.Fatal(err)
			}
			for _, lv := range out.Levels {
				t.Logf("c=%3g %7.1f tok/s  %s TTFT %8s  TPOT %8s  KV %.2f  preempt/s %.2f  %s",
					lv.Point.Concurrency, lv.Point.OutputTokensPerSecond, quantileLabel(slo.Quantile),
					seconds(lv.TTFTAtQuantile), seconds(lv.TPOTAtQuantile), lv.Point.KVCacheUsage, lv.Point.PreemptionsPerSecond, verdict(lv, slo))
			}
			if out.Profile != nil {
				t.Logf("found knee %g in %d levels %v (%s), in %s; true knee %g",
					out.Profile.Knee.Concurrency, len(out.Levels), out.Profile.Sweep.Levels, out.Reason, wall.Round(100*time.Millisecond), truth.Knee.Concurrency)
			}
			if worst, at := fidelity(out, truth); worst > fidelityTolerance {
				t.Skipf("the simulator could not hold its timeline on this machine: at concurrency %g it made %.0f%% fewer tokens/s than in virtual time (limit %.0f%%); the run says nothing about the sweep",
					at, 100*worst, 100*fidelityTolerance)
			}
			if excess, at := latencyNoise(out, truth); excess > latencyNoiseTolerance*slo.TTFT.Seconds() {
				t.Skipf("wall-clock noise on this machine is too large for this SLO: at concurrency %g, below the true knee, p99 TTFT was %s above the virtual-time truth, more than %.0f%% of the %s threshold; the run says nothing about the sweep",
					at, seconds(excess), 100*latencyNoiseTolerance, slo.TTFT)
			}
			if err != nil {
				t.Fatal(err)
			}
			found, want := out.Profile.Knee.Concurrency, truth.Knee.Concurrency
			row := fmt.Sprintf("| %s | %s | %g | %g | %d | %s |", kc.preset, kc.workload, want, found, len(out.Levels), wall.Round(100*time.Millisecond))
			table = append(table, row)
			t.Log(row)
			// Must-show 2: the written profile loads and validates.
			path := filepath.Join(t.TempDir(), "profile.yaml")
			data, err := out.Profile.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteFileAtomic(path, data); err != nil {
				t.Fatal(err)
			}
			if _, err := knee.Load(path); err != nil {
				t.Errorf("the written profile does not load: %v", err)
			}
			if math.Abs(found-want) > 0.1*want {
				t.Errorf("knee %g, true knee %g: off by more than 10%% (levels %v, %s)", found, want, out.Profile.Sweep.Levels, out.Reason)
			}
			if len(out.Levels) > 8 {
				t.Errorf("%d levels %v, want at most 8", len(out.Levels), out.Profile.Sweep.Levels)
			}
			t.Logf("limiting resource %s (truth: %s)", out.Profile.Knee.LimitingResource, truth.Knee.LimitingResource)
		})
	}
	t.Logf("\n| preset | workload | true knee | found knee | levels | wall time |\n|---|---|---:|---:|---:|---:|\n%s", strings.Join(table, "\n"))
}

// latencyNoiseTolerance is how much of the TTFT threshold the machine's
// own latency noise may take before a run cannot place a knee: below the
// true knee, measured p99 TTFT may exceed the virtual-time truth by at most
// this share of the threshold (scheduling delays of a loaded machine add
// tens of milliseconds to wall-clock tails).
const latencyNoiseTolerance = 0.2

// latencyNoise returns the largest excess of measured p99 TTFT over the
// truth at levels at or below the true knee, and where it was.
func latencyNoise(out *Outcome, truth knee.Profile) (worst, at float64) {
	for _, lv := range out.Levels {
		for _, pt := range truth.Points {
			if pt.Concurrency == lv.Point.Concurrency && pt.Concurrency <= truth.Knee.Concurrency {
				if excess := lv.Point.TTFT.P99 - pt.TTFT.P99; excess > worst {
					worst, at = excess, pt.Concurrency
				}
			}
		}
	}
	return worst, at
}

// fidelity returns the largest shortfall of measured throughput against the
// virtual-time truth over the levels both measured, and where it was.
func fidelity(out *Outcome, truth knee.Profile) (worst, at float64) {
	for _, lv := range out.Levels {
		for _, pt := range truth.Points {
			if pt.Concurrency == lv.Point.Concurrency && pt.OutputTokensPerSecond > 0 {
				if short := 1 - lv.Point.OutputTokensPerSecond/pt.OutputTokensPerSecond; short > worst {
					worst, at = short, pt.Concurrency
				}
			}
		}
	}
	return worst, at
}

// TestInterruptedSweepWritesAPartialProfile cancels a sweep after its
// third level and checks the levels measured come back as a valid profile
// marked partial, with the error saying it was interrupted.
func TestInterruptedSweepWritesAPartialProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the simulator for a few seconds")
	}
	st := startSim(t, "llama-3.1-8b-h100", 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prog := &cancelAfter{levels: 4, cancel: cancel}
	out, err := Run(ctx, Config{
		Client: st.client(16), Workload: resolveChat(), Seed: 1, MinRequests: 100,
		SLO:      knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(time.Second), Quantile: 0.99},
		Progress: prog,
	})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("error %v, want ErrInterrupted", err)
	}
	if out == nil || out.Profile == nil {
		t.Fatal("no profile came back")
	}
	if !out.Profile.Metadata.Partial {
		t.Error("the profile is not marked partial")
	}
	if got := out.Profile.Sweep.Levels; len(got) != 3 || got[2] != 4 {
		t.Errorf("levels %v, want the three completed before the cancel: [1 2 4]", got)
	}
	if err := out.Profile.Validate(); err != nil {
		t.Errorf("the partial profile does not validate: %v", err)
	}
	if !strings.Contains(out.Reason, "interrupted during concurrency 8") {
		t.Errorf("reason %q", out.Reason)
	}
}

// cancelAfter cancels the sweep as its n-th level starts running requests.
type cancelAfter struct {
	levels int
	cancel context.CancelFunc
	index  int
}

func (c *cancelAfter) StartLevel(index, _, _ int) { c.index = index }
func (c *cancelAfter) Update(done int) {
	if c.index == c.levels && done == 5 {
		c.cancel()
	}
}
func (c *cancelAfter) EndLevel() {}
