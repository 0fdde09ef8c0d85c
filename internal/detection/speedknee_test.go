package detection

import (
	"context"
	"crypto/sha256"
	"errors"
	"math"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/workload"
)

// TestSpeedKneeAgainstTheTruth measures how well kneewatch moves a Poisson
// knee for a slower GPU (the effective-load dimension's knee,
// knee.Profile.speedKnee) against the simulator's true Poisson knee at 1.4×
// and 2× slower, on every suite deployment, split into two halves by a hash
// of the deployment's name: the blend weight in speedKnee was chosen on
// half A and is reported on half B. It takes about 3 minutes of knee
// searches (2026-12-04; 35 before the calibrated presets), so it runs only
// when KNEEWATCH_SPEED_BENCH is set (4 since profiles carry a speed model).
//
// Beside it, with KNEEWATCH_SPEED_BENCH_DILATION set (about a minute
// more), the floor any reading of a profile can reach: the knee of time
// dilated, searched directly (the bench's Poisson search at full speed,
// thresholds ÷ s; see knee.SpeedModel), which differs from the true slowed
// knee only by the two searches' noise and the SLO window, which does not
// stretch. On 2026-12-04, over both halves (56 knees): median |ln| 0.122
// and p90 0.276 in flight, 0.075 and 0.188 in request rate. speedKnee
// read 0.16 and 0.38 in flight off the closed-loop curve (half A 0.205 and
// 0.419, half B 0.127 and 0.356), and 0.12 and 0.31 from the default speed
// model the bench's profiles now carry (half A 0.143 and 0.285, half B
// 0.097 and 0.309): the in-flight knee of one search is that noisy near
// the knee (see TestPoissonKneeSeedSpread), so a better reading cannot
// show against this truth.
func TestSpeedKneeAgainstTheTruth(t *testing.T) {
	if os.Getenv("KNEEWATCH_SPEED_BENCH") == "" {
		t.Skip("set KNEEWATCH_SPEED_BENCH to measure the speed knee against the simulator's true knees (~3 min)")
	}
	deps, _, err := suiteDeployments(sim.PresetNames(), workload.PresetNames())
	if err != nil {
		t.Fatal(err)
	}
	kc := newKneeCache(Options{}.withDefaults())
	ctx := context.Background()
	errs := map[string][]float64{}
	dilation := os.Getenv("KNEEWATCH_SPEED_BENCH_DILATION") != ""
	var dilatedC, dilatedRate []float64
	for _, dep := range deps {
		slo, err := kc.slo(ctx, dep)
		if err != nil {
			t.Fatal(err)
		}
		dep.SLO = slo
		p, err := kc.profile(ctx, dep, "", 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		// The halves: the parity of the SHA-256 of "preset workload tightness".
		sum := sha256.Sum256([]byte(dep.Preset + " " + dep.Workload + " " + dep.Tightness))
		half := [2]string{"A", "B"}[sum[len(sum)-1]%2]
		for _, s := range []float64{1.4, 2.0} {
			slow, err := kc.profile(ctx, dep, "", 0, s)
			if err != nil {
				t.Fatal(err)
			}
			// kneewatch's moved knee, read back from the effective-load
			// ratio of a replica at half its knee making 1/s of its tokens.
			load := p.Knee.Concurrency / 2
			exp, _ := p.CurveAt(load)
			obs := knee.NewObservation()
			obs.InFlight = load
			obs.OutputTokensPerSecond = exp.OutputTokensPerSecond / s
			r := knee.Evaluate(obs, &p, knee.Options{})
			moved := load / r.Ratios[knee.DimensionEffectiveLoad]
			e := math.Log(moved / slow.Knee.Concurrency)
			errs[half] = append(errs[half], math.Abs(e))
			t.Logf("%s %s/%s %s ×%.1f slower: knee %.1f → true %.1f, kneewatch %.1f (ln error %+.2f)",
				half, dep.Preset, dep.Workload, dep.Tightness, s, p.Knee.Concurrency, slow.Knee.Concurrency, moved, e)
			if dilation {
				d, err := dilatedKnee(ctx, dep, s)
				if err != nil {
					t.Logf("  time dilated: %v", err)
					continue
				}
				dc, dr := math.Log(d.Knee.Concurrency/slow.Knee.Concurrency), math.Log(d.Knee.RequestsPerSecond/s/slow.Knee.RequestsPerSecond)
				dilatedC, dilatedRate = append(dilatedC, math.Abs(dc)), append(dilatedRate, math.Abs(dr))
				t.Logf("  time dilated: %.1f in flight (ln %+.2f), %.3g requests/s (true %.3g, ln %+.2f)",
					d.Knee.Concurrency, dc, d.Knee.RequestsPerSecond/s, slow.Knee.RequestsPerSecond, dr)
			}
		}
	}
	for _, half := range []string{"A", "B"} {
		v := errs[half]
		slices.Sort(v)
		t.Logf("half %s: %d knees, |ln(kneewatch ÷ truth)| median %.3f, p90 %.3f", half, len(v), v[len(v)/2], v[int(0.9*float64(len(v)-1))])
	}
	for _, v := range []struct {
		name string
		errs []float64
	}{{"in flight", dilatedC}, {"request rate", dilatedRate}} {
		if len(v.errs) == 0 {
			continue
		}
		slices.Sort(v.errs)
		t.Logf("time dilated, both halves: %d knees, |ln(dilated ÷ truth)| in %s median %.3f, p90 %.3f",
			len(v.errs), v.name, v.errs[len(v.errs)/2], v.errs[int(0.9*float64(len(v.errs)-1))])
	}
}

// dilatedKnee is dep's Poisson knee at full speed under thresholds ÷ s:
// the knee of a GPU slower by s, in flight, and s times its rate (see
// TestSpeedKneeAgainstTheTruth).
func dilatedKnee(ctx context.Context, dep Deployment, s float64) (knee.Profile, error) {
	preset, err := sim.LoadPreset(dep.Preset)
	if err != nil {
		return knee.Profile{}, err
	}
	tight := dep.SLO
	tight.TTFT = knee.Duration(float64(tight.TTFT) / s)
	tight.TPOT = knee.Duration(float64(tight.TPOT) / s)
	return poissonKneeAt(ctx, dep.Workload, preset, 1, tight, 1, Options{}.withDefaults().Seed)
}

// poissonKneeAt is the bench's Poisson knee search (its warm-up, steady
// part, tick, SLO window, low end and halvings) of a workload on preset
// slowed down by slowdown, under slo, with every time setting × timeScale
// (1: as the bench runs it), arrivals and lengths drawn from seed.
func poissonKneeAt(ctx context.Context, workloadName string, preset sim.Preset, slowdown float64, slo knee.SLO, timeScale float64, seed uint64) (knee.Profile, error) {
	ol, _ := poissonSearch(Options{}.withDefaults())
	for _, x := range []*time.Duration{&ol.Warmup, &ol.Steady, &ol.Tick, &ol.SLOWindow} {
		*x = time.Duration(float64(*x) * timeScale)
	}
	return poissonKneeWith(ctx, workloadName, preset, slowdown, slo, seed, ol)
}

// poissonKneeWith is a Poisson knee search of a workload on preset slowed
// down by slowdown, under slo, with the search settings ol, arrivals and
// lengths drawn from seed.
func poissonKneeWith(ctx context.Context, workloadName string, preset sim.Preset, slowdown float64, slo knee.SLO, seed uint64, ol sim.OpenLoopConfig) (knee.Profile, error) {
	gen, err := blendGenerator(workloadName, "", 0, seed)
	if err != nil {
		return knee.Profile{}, err
	}
	return sim.FindKnee(ctx, sim.KneeConfig{Engine: sim.Config{Preset: preset, Slowdown: slowdown}, Workload: gen, SLO: slo, Seed: seed,
		MaxConcurrency: preset.MaxNumSeqs, Arrivals: knee.ArrivalsPoisson, OpenLoop: ol})
}

// TestSpeedPointBias asks whether a speed model's point (the knee at full
// speed under the SLO's thresholds × e, knee.SLOAtSpeed) is biased against
// the knee of a GPU that is really slower by 1/e, beyond one search's
// noise: for every suite deployment and seeds 1-3, both Poisson searches
// with the same seed, and a third at full speed with the thresholds × e
// and the searches' time settings (warm-up, steady part, tick, SLO window)
// × e too, the time dilation made complete. It prints the signed
// ln(point ÷ slower GPU's knee) per speed. Run by hand
// (KNEEWATCH_SPEED_BIAS=1, about 2 minutes). On 2026-12-06, 84 draws a
// speed: at 0.8 a median of -0.010 (mean +0.003, p10 -0.258, p90 +0.269,
// 39 above 0), time dilated +0.005; at 0.6 -0.045 (mean -0.031, p10
// -0.304, p90 +0.225, 34 above 0), time dilated -0.016. No bias beyond
// the noise: a throttle ramp's knee read 15% high at 0.8 (tune 1094) is
// that search's draw.
func TestSpeedPointBias(t *testing.T) {
	if os.Getenv("KNEEWATCH_SPEED_BIAS") == "" {
		t.Skip("set KNEEWATCH_SPEED_BIAS to compare speed-model points with slowed GPUs' knees (a few minutes)")
	}
	deps, _, err := suiteDeployments(sim.PresetNames(), workload.PresetNames())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kc := newKneeCache(Options{}.withDefaults())
	type draw struct{ scaled, dilated float64 }
	var mu sync.Mutex
	draws := map[float64][]draw{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, dep := range deps {
		slo, err := kc.slo(ctx, dep)
		if err != nil {
			t.Fatal(err)
		}
		dep.SLO = slo
		preset, err := sim.LoadPreset(dep.Preset)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range []float64{0.8, 0.6} {
			for seed := uint64(1); seed <= 3; seed++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					search := func(slowdown float64, slo knee.SLO, timeScale float64) (float64, error) {
						p, err := poissonKneeAt(ctx, dep.Workload, preset, slowdown, slo, timeScale, seed)
						return p.Knee.Concurrency, err
					}
					slower, err1 := search(1/e, dep.SLO, 1)
					scaled, err2 := search(1, knee.SLOAtSpeed(dep.SLO, e), 1)
					dilated, err3 := search(1, knee.SLOAtSpeed(dep.SLO, e), e)
					if err := errors.Join(err1, err2, err3); err != nil {
						t.Logf("%s/%s %s at %g, seed %d: %v", dep.Preset, dep.Workload, dep.Tightness, e, seed, err)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					draws[e] = append(draws[e], draw{math.Log(scaled / slower), math.Log(dilated / slower)})
				}()
			}
		}
	}
	wg.Wait()
	for _, e := range []float64{0.8, 0.6} {
		for _, v := range []struct {
			name string
			of   func(draw) float64
		}{{"thresholds × e", func(d draw) float64 { return d.scaled }}, {"time dilated", func(d draw) float64 { return d.dilated }}} {
			var xs []float64
			above := 0
			for _, d := range draws[e] {
				x := v.of(d)
				xs = append(xs, x)
				if x > 0 {
					above++
				}
			}
			if len(xs) == 0 {
				continue
			}
			slices.Sort(xs)
			var sum float64
			for _, x := range xs {
				sum += x
			}
			t.Logf("speed %g, %s: %d draws, ln(point ÷ slowed knee) median %+.3f, mean %+.3f, p10 %+.3f, p90 %+.3f; above 0 in %d",
				e, v.name, len(xs), xs[len(xs)/2], sum/float64(len(xs)), xs[len(xs)/10], xs[len(xs)*9/10], above)
		}
	}
}
