package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/workload"
)

// runSimKnee prints the simulator's true knee profile for a preset and
// workload: `kneewatch sim knee --preset P --workload W --slo-ttft D --slo-tpot D`.
func runSimKnee(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sim knee", flag.ContinueOnError)
	fs.SetOutput(stderr)
	preset := fs.String("preset", "llama-3.1-8b-h100", "simulator preset: "+strings.Join(sim.PresetNames(), ", "))
	presetFile := fs.String("preset-file", "", "YAML file overriding fields of --preset (strict: unknown keys are errors)")
	wl := fs.String("workload", "chat", "workload: a preset ("+strings.Join(workload.PresetNames(), ", ")+
		"), a mix .yaml file, or a .jsonl/.csv trace")
	sloTTFT := fs.Duration("slo-ttft", 0, "TTFT threshold at --slo-quantile, e.g. 500ms (required)")
	sloTPOT := fs.Duration("slo-tpot", 0, "TPOT threshold at --slo-quantile, e.g. 30ms (required)")
	quantile := fs.Float64("slo-quantile", 0.99, "SLO quantile, in (0,1)")
	speed := fs.Float64("speed", 1, "make the simulated GPU K times faster: every latency is divided by K, so give\n"+
		"SLOs divided by K too; the knee at speed K with SLOs/K equals the knee at speed 1 with the\n"+
		"original SLOs, and the profile's throughputs are K times higher")
	maxC := fs.Int("max-concurrency", 256, "highest concurrency of the doubling sweep")
	seed := fs.Uint64("seed", 1, "seed of the workload draws; the same inputs and seed give the same knee")
	arrivals := fs.String("arrivals", string(knee.ArrivalsPoisson), "how the knee is measured: "+string(knee.ArrivalsPoisson)+
		" (steady open-loop arrivals, as users send) or "+string(knee.ArrivalsClosedLoop)+"\n(a fixed number of clients); see above")
	steady := fs.Duration("open-loop-steady", sim.DefaultOpenLoopSteady, fmt.Sprintf("with --arrivals poisson: the judged part of each trial, at every\n"+
		"%s of which the SLO percentiles over the last %s must hold", sim.DefaultOpenLoopTick, knee.DefaultSLOWindow))
	warmup := fs.Duration("open-loop-warmup", sim.DefaultOpenLoopWarmup, "with --arrivals poisson: how long each trial runs before it is judged")
	mixScales := fs.String("mix-scales", "", "also measure the knee at the workload scaled by each PROMPT:OUTPUT factor pair\n"+
		"(e.g. 2:1,1:2,2:2; \"quick\" for "+knee.FormatMixScales(knee.QuickMixScales)+", or \"default\" for "+knee.FormatMixScales(knee.DefaultMixScales)+") and add the\n"+
		"mixModel the knee moves with when live traffic's mean prompt or output drifts; empty: none")
	speedModel := fs.String("speed-model", "", "also measure the knee under the SLO's thresholds × each speed, a share of the GPU's\n"+
		"(e.g. 0.8,0.5, or \"default\" for "+joinSpeeds(knee.DefaultSpeeds)+"), and add the speedModel: where the knee\n"+
		"lies when the GPU runs that much slower (throttled); empty: none")
	// warn: the profile on standard output is the result; the search's
	// progress is not news.
	newLogger := logFlags(fs, "warn")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: kneewatch sim knee --slo-ttft D --slo-tpot D [flags]")
		fmt.Fprintln(stderr, "\nRuns the simulator closed-loop in virtual time at concurrency 1, 2, 4, … and refines to")
		fmt.Fprintln(stderr, "the largest concurrency meeting both SLO quantiles; prints the knee profile as YAML.")
		fmt.Fprintln(stderr, "\n--arrivals closed-loop measures the knee as vllm bench --max-concurrency does:")
		fmt.Fprintln(stderr, "each client sends its next request when its last one ends, so clients pace themselves by")
		fmt.Fprintln(stderr, "the replica, prefills never bunch up and the queue never grows. Production traffic is")
		fmt.Fprintln(stderr, "open-loop: users send whether or not the replica keeps up, in Poisson-like bursts that")
		fmt.Fprintln(stderr, "queue up and break the SLO at a lower load. --arrivals poisson then bisects a steady Poisson")
		fmt.Fprintf(stderr, "rate between %g× and 1× the closed-loop knee's request rate (each trial --open-loop-warmup\n", sim.DefaultOpenLoopLow)
		fmt.Fprintln(stderr, "plus --open-loop-steady of virtual time) for the largest rate that kept the SLO in every")
		fmt.Fprintln(stderr, "window; the knee becomes the mean in-flight requests at that rate, the points stay the")
		fmt.Fprintln(stderr, "closed-loop curve. Poisson is the default: on the detection suite a closed-loop knee")
		fmt.Fprintln(stderr, "overstates what open traffic gets by 15–41% of the knee's rate.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("sim knee: unexpected arguments %q", fs.Args())
	}
	switch {
	case *sloTTFT <= 0:
		return errors.New("sim knee: --slo-ttft is required and must be > 0 (e.g. 500ms)")
	case *sloTPOT <= 0:
		return errors.New("sim knee: --slo-tpot is required and must be > 0 (e.g. 30ms)")
	case !(*quantile > 0 && *quantile < 1):
		return fmt.Errorf("sim knee: --slo-quantile must be in (0,1), got %v", *quantile)
	case !(*speed > 0):
		return fmt.Errorf("sim knee: --speed must be > 0, got %v", *speed)
	case *maxC < 1:
		return fmt.Errorf("sim knee: --max-concurrency must be ≥ 1, got %d", *maxC)
	case *arrivals != string(knee.ArrivalsClosedLoop) && *arrivals != string(knee.ArrivalsPoisson):
		return fmt.Errorf("sim knee: --arrivals must be %s or %s, got %q", knee.ArrivalsClosedLoop, knee.ArrivalsPoisson, *arrivals)
	case *steady <= 0:
		return fmt.Errorf("sim knee: --open-loop-steady must be > 0, got %s", *steady)
	case *warmup <= 0:
		return fmt.Errorf("sim knee: --open-loop-warmup must be > 0 (a trial starts with an empty replica), got %s", *warmup)
	}

	logger, err := newLogger(stderr)
	if err != nil {
		return fmt.Errorf("sim knee: %w", err)
	}
	var scales []knee.MixScale
	if *mixScales != "" {
		if scales, err = knee.ParseMixScales(*mixScales); err != nil {
			return fmt.Errorf("sim knee: --mix-scales: %w", err)
		}
	}
	var speeds []float64
	if *speedModel != "" {
		if speeds, err = knee.ParseSpeeds(*speedModel); err != nil {
			return fmt.Errorf("sim knee: --speed-model: %w", err)
		}
	}
	p, err := sim.LoadPreset(*preset)
	if err != nil {
		return fmt.Errorf("sim knee: --preset: %w", err)
	}
	if *presetFile != "" {
		if p, err = p.OverrideFile(*presetFile); err != nil {
			return fmt.Errorf("sim knee: --preset-file: %w", err)
		}
	}
	gen, err := workload.Resolve(*wl, *seed)
	if err != nil {
		return fmt.Errorf("sim knee: --workload: %w", err)
	}
	prof, err := sim.FindKnee(ctx, sim.KneeConfig{
		Engine:         sim.Config{Preset: p, Speed: *speed},
		Workload:       gen,
		SLO:            knee.SLO{TTFT: knee.Duration(*sloTTFT), TPOT: knee.Duration(*sloTPOT), Quantile: *quantile},
		MaxConcurrency: *maxC,
		Seed:           *seed,
		Clock:          time.Now,
		Arrivals:       knee.Arrivals(*arrivals),
		OpenLoop:       sim.OpenLoopConfig{Steady: *steady, Warmup: *warmup},
		MixScales:      scales,
		Speeds:         speeds,
		Logger:         logger,
	})
	if err != nil {
		return fmt.Errorf("sim knee: %w", err)
	}
	switch {
	case prof.Metadata.Partial && prof.Knee.Arrivals == knee.ArrivalsPoisson:
		fmt.Fprintf(stderr, "sim knee: warning: every level up to --max-concurrency %d met the SLO; the closed-loop knee is at least %d, "+
			"and the poisson search went no higher than its rate (profile marked partial)\n", *maxC, *maxC)
	case prof.Metadata.Partial:
		fmt.Fprintf(stderr, "sim knee: warning: every level up to --max-concurrency %d met the SLO; the knee is at least %d (profile marked partial)\n", *maxC, *maxC)
	}
	enc := yaml.NewEncoder(stdout)
	enc.SetIndent(2)
	if err := enc.Encode(prof); err != nil {
		return fmt.Errorf("sim knee: writing the profile: %w", err)
	}
	return enc.Close()
}
