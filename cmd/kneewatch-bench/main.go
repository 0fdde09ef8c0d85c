// Command kneewatch-bench runs kneewatch's detection-quality bench: scripted
// scenarios on the simulator in virtual time, every detector evaluated
// through Prometheus's engine, scored against the simulator's ground truth.
// It writes the Markdown report (docs/benchmarks/detection.md under `make
// bench-detection`). This file only wires flags; the bench is package
// detection.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kneewatch/kneewatch/internal/detection"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/sweep"
)

func main() {
	detection.CollectGarbageLessOften()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "kneewatch-bench:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kneewatch-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "write the Markdown report to this file (default: standard output)")
	only := fs.String("scenarios", "", "comma-separated scenario numbers to run (default: all seven)")
	seed := fs.Uint64("seed", 1, "random seed of arrivals, request lengths and knee sweeps")
	otherSeeds := fs.String("other-seeds", "", "comma-separated seeds to run the same scenarios with again (no what-ifs), for the report's robustness table")
	variants := fs.Bool("what-if", true, "also score kneewatch's page generated with other options, and kneewatch given the closed-loop knee (regressions only)")
	suite := fs.String("suite", "regressions", "what to run besides the regressions: regressions (only them), test (the generated suite's held-out half, which the report is about) or tune (the half defaults may be chosen on)")
	suiteSeed := fs.Uint64("suite-seed", 1, "seed the generated suite is drawn with")
	resweep := fs.Uint64("resweep-seed", 2, "on the suite half, also give a second kneewatch the deployment's profile swept again with this seed, as an operator's own sweep would be (0: off)")
	resweepTrials := fs.String("resweep-trials", "sweep", "how the resweep's Poisson trials run: sweep (as kneewatch sweep runs its own: 1-minute warm-ups, 150 requests, judged at 90% of the thresholds with the runaway test) or truth (as the truth's: 20-minute steady parts at the thresholds)")
	resweepSearches := fs.Int("resweep-searches", 1, fmt.Sprintf("the resweep's knee as `kneewatch sweep --open-loop-searches N` keeps it: N sweeps, at --resweep-seed and at seeds %d apart (as the sweep seeds its searches), and the profile of the one whose knee rate is the median (1: one sweep)", sweep.SearchSeedStride))
	withoutModels := fs.Bool("without-models", true, "on the suite half, also give a second kneewatch the deployment's profile without its mix and speed models, as `kneewatch sweep` writes it by default")
	withoutModelsMix := fs.String("without-models-mix-scales", "", "with --without-models: give that kneewatch a mix model after all, fitted to the truth's knees at these PROMPT:OUTPUT scales only (\"quick\", \"default\" or a list, as kneewatch sweep --mix-scales takes them): what a sweep with them measures (empty: none)")
	truthSeeds := fs.Int("truth-grid-seeds", detection.BenchTruthGridSeeds, "on the suite half, the true knee under a mix share or a slowdown is the median of this many knee searches with different seeds (1: one search, as at nominal conditions)")
	limit := fs.Int("limit", 0, "run only the first N scenarios of the suite half (0: all), for a quick look")
	draws := fs.String("suite-seeds", "", "comma-separated suite seeds: run the --suite half drawn with each of them, together, without the regressions and the what-ifs, and write the report across draws instead (docs/benchmarks/detection-draws.md under `make bench-detection-draws`)")
	checked := fs.String("checked-seeds", "1", "with --suite-seeds: the suite seeds whose draws changes were checked against before (the committed report's), reported apart from the fresh ones")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file, for `go tool pprof`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *truthSeeds < 1 {
		return fmt.Errorf("--truth-grid-seeds must be at least 1, got %d", *truthSeeds)
	}
	if *resweepSearches < 1 || *resweepSearches > sweep.MaxSearches {
		return fmt.Errorf("--resweep-searches must be 1 to %d, got %d", sweep.MaxSearches, *resweepSearches)
	}
	if *resweepTrials != "sweep" && *resweepTrials != "truth" {
		return fmt.Errorf("--resweep-trials must be sweep or truth, got %q", *resweepTrials)
	}
	if *draws != "" {
		// Flags this mode would ignore are an error: --suite-seed beside
		// --suite-seeds, or a what-if the draws never run, would otherwise
		// read as honoured.
		var ignored []string
		fs.Visit(func(f *flag.Flag) {
			if !drawsFlags[f.Name] {
				ignored = append(ignored, "--"+f.Name)
			}
		})
		if len(ignored) > 0 {
			return fmt.Errorf("--suite-seeds runs neither the regressions nor the what-ifs, and draws the suite with its own seeds: %s would be ignored", strings.Join(ignored, ", "))
		}
		if *cpuProfile != "" {
			stopProfile, err := startCPUProfile(*cpuProfile)
			if err != nil {
				return err
			}
			defer stopProfile()
		}
		return runDraws(ctx, drawsRun{half: *suite, seeds: *draws, checked: *checked, seed: *seed, truthSeeds: *truthSeeds, limit: *limit, out: *out},
			args, stdout, stderr)
	}
	scenarios, err := pick(detection.Scenarios(), *only)
	if err != nil {
		return err
	}
	generated, err := suiteHalf(*suite, *suiteSeed, *limit)
	if err != nil {
		return err
	}
	seeds, err := parseSeeds(*otherSeeds)
	if err != nil {
		return err
	}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	started := time.Now()
	opts := detection.Options{
		Scenarios: scenarios,
		Seed:      *seed,
		Logger:    slog.New(slog.NewTextHandler(stderr, nil)),
	}
	if *variants {
		opts.PageVariants = detection.DefaultPageVariants()
		opts.ClosedLoopWhatIf = true
	}
	// The regressions and the suite half run side by side, so neither
	// run's last long scenario leaves a CPU idle.
	var suiteRep *detection.Report
	suiteErr := make(chan error, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if len(generated) > 0 {
		half := opts
		half.Scenarios, half.PageVariants, half.ClosedLoopWhatIf = generated, nil, false
		half.ResweepSeed = *resweep
		half.ResweepLikeSweep = *resweepTrials == "sweep"
		for i := 1; i < *resweepSearches; i++ {
			half.ResweepAverageSeeds = append(half.ResweepAverageSeeds, *resweep+uint64(i)*sweep.SearchSeedStride)
		}
		half.ResweepMedian = *resweepSearches > 1
		half.WithoutModelsWhatIf = *withoutModels
		if *withoutModelsMix != "" {
			if half.WithoutModelsMixScales, err = knee.ParseMixScales(*withoutModelsMix); err != nil {
				return fmt.Errorf("--without-models-mix-scales: %w", err)
			}
		}
		half.TruthGridSeeds = *truthSeeds
		go func() {
			var err error
			suiteRep, err = detection.Run(ctx, half)
			suiteErr <- err
		}()
	} else {
		suiteErr <- nil
	}
	rep, err := detection.Run(ctx, opts)
	if err != nil {
		cancel() // the report needs both; do not wait out the other
	}
	if serr := <-suiteErr; serr != nil && err == nil {
		return fmt.Errorf("suite %s: %w", *suite, serr)
	}
	if err != nil {
		return err
	}
	if suiteRep != nil {
		rep.Suite, rep.SuiteHalf, rep.SuiteSeed = suiteRep, *suite, *suiteSeed
	}
	for _, seed := range seeds {
		other := opts
		other.Seed, other.PageVariants, other.ClosedLoopWhatIf = seed, nil, false
		o, err := detection.Run(ctx, other)
		if err != nil {
			return fmt.Errorf("seed %d: %w", seed, err)
		}
		rep.OtherSeeds = append(rep.OtherSeeds, o)
	}
	rep.Wall = time.Since(started)
	command := commandLine(args)
	if *out == "" {
		return rep.Markdown(stdout, command)
	}
	return writeAtomically(*out, func(w io.Writer) error { return rep.Markdown(w, command) })
}

// drawsFlags are the flags --suite-seeds honours.
var drawsFlags = map[string]bool{
	"suite-seeds": true, "checked-seeds": true, "suite": true, "seed": true, "truth-grid-seeds": true,
	"limit": true, "out": true, "cpuprofile": true,
}

// startCPUProfile profiles the process into path until the returned func
// is called; the bench's wall time has a budget, and this is how to see
// where it goes.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// commandLine is how the report says it was made: the make target that ran
// it (KNEEWATCH_BENCH_VIA_MAKE names it; 1 is bench-detection), else this
// command.
func commandLine(args []string) string {
	switch target := os.Getenv("KNEEWATCH_BENCH_VIA_MAKE"); target {
	case "":
		return strings.TrimSpace("go run ./cmd/kneewatch-bench " + strings.Join(args, " "))
	case "1":
		return "make bench-detection"
	default:
		return "make " + target
	}
}

// suiteHalf is the generated scenarios --suite asks for (none for
// regressions), the first limit of them when limit > 0.
func suiteHalf(name string, seed uint64, limit int) ([]detection.Scenario, error) {
	if name == "regressions" {
		return nil, nil
	}
	if limit < 0 {
		return nil, fmt.Errorf("--limit: %d is not a number of scenarios (0 for all)", limit)
	}
	if seed == 0 {
		return nil, errors.New("--suite-seed: 0 is not a seed (a whole number ≥ 1)")
	}
	s, err := detection.GenerateSuite(detection.SuiteOptions{Seed: seed})
	if err != nil {
		return nil, err
	}
	half, err := s.Half(name)
	if err != nil {
		return nil, fmt.Errorf("--suite: %w (or regressions)", err)
	}
	if limit > 0 && limit < len(half) {
		half = half[:limit]
	}
	return half, nil
}

// parseSeeds reads --other-seeds, a comma-separated list of seeds ("" is
// none).
func parseSeeds(list string) ([]uint64, error) {
	return parseSeedList("--other-seeds", list)
}

// parseSeedList reads flag's comma-separated list of seeds ("" is none).
func parseSeedList(flag, list string) ([]uint64, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out []uint64
	for _, f := range strings.Split(list, ",") {
		s, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil || s == 0 {
			return nil, fmt.Errorf("%s: %q is not a seed (a whole number ≥ 1)", flag, f)
		}
		out = append(out, s)
	}
	return out, nil
}

// pick selects scenarios by number from a comma-separated list ("" is all).
func pick(all []detection.Scenario, list string) ([]detection.Scenario, error) {
	if strings.TrimSpace(list) == "" {
		return all, nil
	}
	var out []detection.Scenario
	for _, f := range strings.Split(list, ",") {
		id, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || id < 1 || id > len(all) {
			return nil, fmt.Errorf("--scenarios: %q is not a scenario number (1–%d)", f, len(all))
		}
		out = append(out, all[id-1])
	}
	return out, nil
}

// writeAtomically writes path through a temporary file in the same
// directory, so an interrupted run never leaves half a report.
func writeAtomically(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".kneewatch-bench-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
