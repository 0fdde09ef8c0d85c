package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
	"github.com/kneewatch/kneewatch/sweep"
	"github.com/kneewatch/kneewatch/workload"
)

func init() {
	register("sweep", "measure a replica's knee with a closed-loop concurrency sweep (and, with --arrivals poisson, steady Poisson trials); write its profile, plot and report", runSweep)
}

// apiKeyEnv are the variables an API key is read from, in order, when no
// --api-key-file is given.
var apiKeyEnv = []string{"KNEEWATCH_API_KEY", "OPENAI_API_KEY"}

func runSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", "", "OpenAI-compatible server, e.g. http://127.0.0.1:8000 (/v1 is added to a bare host) (required)")
	model := fs.String("model", "", "served model name, as GET /v1/models lists it (required)")
	apiKeyFile := fs.String("api-key-file", "", "file holding the API key, sent as a bearer token; else $"+strings.Join(apiKeyEnv, " or $"))
	chat := fs.Bool("chat", false, "send /v1/chat/completions instead of /v1/completions")
	metricsURL := fs.String("metrics-url", "", "engine /metrics read during each level (default: the target's /metrics if it serves engine metrics; \"none\" to skip)")
	dcgmURL := fs.String("dcgm-url", "", "dcgm-exporter /metrics for GPU utilization")
	dcgmUUID := fs.String("dcgm-uuid", "", "select the replica's GPUs on --dcgm-url by UUID")
	dcgmPod := fs.String("dcgm-pod", "", "select the replica's GPUs on --dcgm-url by pod label")
	dcgmNamespace := fs.String("dcgm-namespace", "", "select the replica's GPUs on --dcgm-url by namespace label")
	sloTTFT := fs.Duration("slo-ttft", 0, "TTFT threshold at --slo-quantile, e.g. 500ms (required)")
	sloTPOT := fs.Duration("slo-tpot", 0, "TPOT threshold at --slo-quantile, e.g. 30ms (required)")
	quantile := fs.Float64("slo-quantile", 0.99, "SLO quantile, in (0,1)")
	wl := fs.String("workload", "chat", "workload: a preset ("+strings.Join(workload.PresetNames(), ", ")+"), a mix .yaml file, or a .jsonl/.csv trace")
	seed := fs.Uint64("seed", 1, "seed of the workload draws")
	maxC := fs.Int("max-concurrency", sweep.DefaultMaxConcurrency, "highest concurrency of the doubling")
	precision := fs.Float64("precision", sweep.DefaultPrecision, "with --arrivals closed-loop: refine until the knee's bracket is this narrow, relative to the knee")
	maxLevels := fs.Int("max-levels", 0, "stop after this many levels (0: no limit)")
	minRequests := fs.Int("min-requests", 0, "smallest steady-state window per level in completed requests (0: 2 ÷ (1 − quantile), at least 100; 200 for p99)")
	warmup := fs.Int("warmup-requests", 0, "completions discarded before each window (0: concurrency + min(concurrency, 8))")
	levelTimeout := fs.Duration("level-timeout", 15*time.Minute, "end a level whose window has not filled by then and judge it on what completed (0: no limit)")
	scrapeInterval := fs.Duration("scrape-interval", time.Second, "how often the metrics are scraped during a level")
	out := fs.String("out", "", "knee profile to write (YAML) (required)")
	plotPath := fs.String("plot", "", "plot to write: .png or .svg")
	reportPath := fs.String("report", "", "Markdown report to write")
	name := fs.String("name", "", "profile name (default: model and workload)")
	gpu := fs.String("gpu", "", "GPU model for the profile's match when no --dcgm-url says it")
	engineVersion := fs.String("engine-version", "", "engine version for the profile's match, e.g. 0.11.0")
	arrivals := fs.String("arrivals", string(knee.ArrivalsPoisson), "how the knee is measured: poisson (after the closed-loop search, steady Poisson trials find the largest\n"+
		"rate that keeps the SLO: the knee for open traffic, from users, an API or a gateway), or closed-loop (the\n"+
		"closed-loop search alone: for replicas fed by a fixed pool of workers, or a quick curve)")
	olWarmup := fs.Duration("open-loop-warmup", sweep.DefaultOpenLoopWarmup, "with --arrivals poisson: how long each trial runs before its SLO is judged")
	olSteady := fs.Duration("open-loop-steady", sweep.DefaultOpenLoopSteady, "with --arrivals poisson: the shortest judged part of a trial (about 5 trials run)")
	olRequests := fs.Int("open-loop-requests", sweep.DefaultOpenLoopRequests, "with --arrivals poisson: a trial's judged part lasts until this many requests were sent\n"+
		"at its rate (and at least --open-loop-steady), so every trial is judged on enough requests; a trial\n"+
		"stops at its first tick whose windowed SLO is breached")
	olShare := fs.Float64("open-loop-threshold-share", sweep.DefaultThresholdShare, "with --arrivals poisson: a trial keeps the SLO only if its windowed percentiles stayed within\n"+
		"this share of each threshold: a trial of a few minutes meets fewer bad windows than a long run at the\n"+
		"same rate (1: judge at the thresholds themselves). A trial whose requests in flight kept climbing\n"+
		"(the last third of its judged part over 60% and 3 requests above the first) is not kept either")
	olSearches := fs.Int("open-loop-searches", 1, fmt.Sprintf("with --arrivals poisson: search the rate this many times (1 to %d), each search on other draws,\n", sweep.MaxSearches)+
		"and keep the median search's knee; each search costs its trials again (in the simulator, 3 searches put the\n"+
		"knee's rate within ±10% of a long run's in 92 of 112 sweeps, one search in 81)")
	sequential := fs.Bool("sequential", true, "stop a level before its window fills when its verdict is already clear: a binomial test\n"+
		"for a level past the knee (size 0.0003 per look), and a screening window of two requests per worker\n"+
		"(10 to 30; at concurrency 1, 2 and 4, two per worker and at least 4 well within the SLO) for a level\n"+
		"below it, which is measured in full before the knee may rest on it; false: every level fills its window")
	mixScales := fs.String("mix-scales", "", "after the knee, measure it again at the workload scaled by each PROMPT:OUTPUT factor pair\n"+
		"(e.g. 2:1,1:2,2:2; \"quick\" for "+knee.FormatMixScales(knee.QuickMixScales)+", or \"default\" for "+knee.FormatMixScales(knee.DefaultMixScales)+") and add the mixModel\n"+
		"the knee moves with when live traffic's mean prompt or output drifts; each pair is a whole sweep; empty: none")
	speeds := fs.String("speed-model", "", "after the knee, measure it again under the SLO's thresholds × each speed, a share of the\n"+
		"GPU's (e.g. 0.8,0.5, or \"default\" for "+joinSpeeds(knee.DefaultSpeeds)+"), and add the speedModel: where the knee lies\n"+
		"when the GPU runs that much slower (throttled); each speed is a whole sweep; empty: none")
	maxModelLen := fs.Int("max-model-len", 0, "with --mix-scales: the server's --max-model-len, so no scaled request is longer (0: no cap)")
	newLogger := logFlags(fs, "info")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: kneewatch sweep --target URL --model NAME --slo-ttft D --slo-tpot D --out profile.yaml [flags]")
		fmt.Fprintln(stderr, "\nDrives the endpoint closed-loop at concurrency 1, 2, 4, … until the SLO breaks or errors pass")
		fmt.Fprintln(stderr, "1%. With --arrivals poisson (the default) it stops after one more level below that one and")
		fmt.Fprintln(stderr, "bisects a steady Poisson rate between 0.2× and 1× the lowest broken level's (the last kept level's")
		fmt.Fprintln(stderr, "where throughput collapsed past a KV-bound knee; about 5 trials, each sized by")
		fmt.Fprintln(stderr, "--open-loop-requests), and reports the largest rate that kept the SLO: the knee to give")
		fmt.Fprintln(stderr, "kneewatch for open traffic. With --arrivals closed-loop it refines between the last good and")
		fmt.Fprintln(stderr, "the first bad level to --precision instead. Writes the knee profile `kneewatch serve` reads,")
		fmt.Fprintln(stderr, "and optionally a plot and a report.")
		fmt.Fprintln(stderr, "Ctrl-C stops at once and writes what was measured, marked partial.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("sweep: unexpected arguments %q", fs.Args())
	}
	switch {
	case *target == "":
		return errors.New("sweep: --target is required (e.g. http://127.0.0.1:8000)")
	case *model == "":
		return errors.New("sweep: --model is required (the name GET /v1/models lists)")
	case *sloTTFT <= 0:
		return errors.New("sweep: --slo-ttft is required and must be > 0 (e.g. 500ms)")
	case *sloTPOT <= 0:
		return errors.New("sweep: --slo-tpot is required and must be > 0 (e.g. 30ms)")
	case !(*quantile > 0 && *quantile < 1):
		return fmt.Errorf("sweep: --slo-quantile must be in (0,1), got %v", *quantile)
	case *out == "":
		return errors.New("sweep: --out is required (the knee profile to write)")
	case *maxC < 1:
		return fmt.Errorf("sweep: --max-concurrency must be ≥ 1, got %d", *maxC)
	case !(*precision > 0 && *precision < 1):
		return fmt.Errorf("sweep: --precision must be in (0,1), got %v", *precision)
	case *maxLevels < 0 || *minRequests < 0 || *warmup < 0:
		return errors.New("sweep: --max-levels, --min-requests and --warmup-requests must be ≥ 0")
	case *maxModelLen < 0:
		return fmt.Errorf("sweep: --max-model-len must be ≥ 0, got %d", *maxModelLen)
	}
	if err := checkArrivals(fs, *arrivals, *olWarmup, *olSteady, *olShare, *olSearches); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if *plotPath != "" {
		if _, err := sweep.PlotFormat(*plotPath); err != nil {
			return fmt.Errorf("sweep: --plot: %w", err)
		}
	}
	logger, err := newLogger(stderr)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}

	base, err := sweep.APIBase(*target)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	var scales []knee.MixScale
	if *mixScales != "" {
		if scales, err = knee.ParseMixScales(*mixScales); err != nil {
			return fmt.Errorf("sweep: --mix-scales: %w", err)
		}
	}
	var speedList []float64
	if *speeds != "" {
		if speedList, err = knee.ParseSpeeds(*speeds); err != nil {
			return fmt.Errorf("sweep: --speed-model: %w", err)
		}
	}
	apiKey, err := readAPIKey(*apiKeyFile)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	gen, err := workload.Resolve(*wl, *seed)
	if err != nil {
		return fmt.Errorf("sweep: --workload: %w", err)
	}
	guessed := *metricsURL == ""
	engineURL := *metricsURL
	switch engineURL {
	case "":
		engineURL = sweep.GuessMetricsURL(base)
	case "none":
		engineURL = ""
	}
	metrics := &sweep.Metrics{
		Scraper:   collector.NewScraper(nil, collector.ScrapeLimits{Timeout: 10 * time.Second}),
		EngineURL: engineURL, Engine: collector.Options{Model: *model},
		DCGMURL: *dcgmURL, GPUs: collector.GPUSelector{UUID: *dcgmUUID, Pod: *dcgmPod, Namespace: *dcgmNamespace},
		Interval: *scrapeInterval,
	}
	slo := knee.SLO{TTFT: knee.Duration(*sloTTFT), TPOT: knee.Duration(*sloTPOT), Quantile: *quantile}
	early := measure.DefaultEarly
	if !*sequential {
		early = measure.Early{}
	}
	res, runErr := sweep.Run(ctx, sweep.Config{
		Client: &sweep.Client{
			BaseURL: base, Model: *model, APIKey: apiKey, Chat: *chat, Stream: true,
			HTTP: sweep.NewHTTPClient(*maxC + 16),
		},
		Workload: gen, Seed: *seed, SLO: slo,
		MaxConcurrency: *maxC, Precision: *precision, MaxLevels: *maxLevels,
		MinRequests: *minRequests, Warmup: *warmup, LevelTimeout: *levelTimeout,
		Metrics: metrics, MetricsGuessed: guessed,
		Name: *name, GPU: *gpu, EngineVersion: *engineVersion, TargetLabel: sweep.Redact(base),
		Logger:      logger,
		Progress:    sweep.NewProgress(stderr, isTerminal(stderr), logger, 10*time.Second),
		Arrivals:    knee.Arrivals(*arrivals),
		OpenLoop:    sweep.OpenLoopConfig{PoissonSearch: knee.PoissonSearch{Warmup: *olWarmup, Steady: *olSteady}, Requests: *olRequests, ThresholdShare: *olShare, Searches: *olSearches},
		MixScales:   scales,
		Speeds:      speedList,
		MaxModelLen: *maxModelLen,
		Early:       &early,
	})
	if res == nil {
		return fmt.Errorf("sweep: %w", runErr)
	}
	if err := writeSweepOutputs(res, *out, *plotPath, *reportPath, sweep.ReportInfo{
		Target: sweep.Redact(base), Model: *model, Workload: *wl, SLO: slo,
	}, stdout); err != nil {
		return fmt.Errorf("sweep: %w", errors.Join(runErr, err))
	}
	if runErr != nil {
		return fmt.Errorf("sweep: %w", runErr)
	}
	return nil
}

// writeSweepOutputs writes the profile (when a knee was found), the plot
// and the report, and says on stdout what was written.
func writeSweepOutputs(res *sweep.Outcome, out, plotPath, reportPath string, info sweep.ReportInfo, stdout io.Writer) error {
	if res.Profile != nil {
		data, err := res.Profile.Marshal()
		if err != nil {
			return err
		}
		if err := sweep.WriteFileAtomic(out, data); err != nil {
			return err
		}
		k, partial := res.Profile.Knee, cmp.Or(map[bool]string{true: " — partial"}[res.Profile.Metadata.Partial], "")
		if k.Arrivals == knee.ArrivalsPoisson {
			fmt.Fprintf(stdout, "knee (poisson): %g requests/s, %g in flight (%.0f output tok/s, limited by %s; closed-loop knee ≈ concurrency %g)%s\nprofile: %s\n",
				k.RequestsPerSecond, k.Concurrency, k.OutputTokensPerSecond, k.LimitingResource, k.ClosedLoopConcurrency, partial, out)
		} else {
			fmt.Fprintf(stdout, "knee: concurrency %g (%.0f output tok/s, limited by %s)%s\nprofile: %s\n",
				k.Concurrency, k.OutputTokensPerSecond, k.LimitingResource, partial, out)
		}
		if res.Profile.MixModel == nil {
			// On the detection bench, a profile without one more than
			// doubled the headroom error where the mix moved.
			fmt.Fprintf(stdout, "mix model: none, so kneewatch keeps this knee when the traffic's mix shifts; --mix-scales quick measures one with %d more knee searches, --mix-scales default with %d (see \"kneewatch given a profile without models\" in docs/benchmarks/detection.md)\n",
				len(knee.QuickMixScales), len(knee.DefaultMixScales))
		}
		info.ProfileFile = relativeTo(reportPath, out)
		if plotPath != "" {
			if err := sweep.SavePlot(plotPath, res.Profile); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "plot: %s\n", plotPath)
			info.PlotFile = relativeTo(reportPath, plotPath)
		}
	}
	if reportPath != "" {
		if err := sweep.SaveReport(reportPath, res, info); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "report: %s\n", reportPath)
	}
	return nil
}

// checkArrivals validates --arrivals and the open-loop flags, which only
// mean something with --arrivals poisson.
func checkArrivals(fs *flag.FlagSet, arrivals string, warmup, steady time.Duration, share float64, searches int) error {
	switch knee.Arrivals(arrivals) {
	case knee.ArrivalsClosedLoop:
		var set []string
		fs.Visit(func(f *flag.Flag) {
			if strings.HasPrefix(f.Name, "open-loop-") {
				set = append(set, "--"+f.Name)
			}
		})
		if len(set) > 0 {
			return fmt.Errorf("%s only apply with --arrivals poisson", strings.Join(set, " and "))
		}
	case knee.ArrivalsPoisson:
		if warmup <= 0 {
			return fmt.Errorf("--open-loop-warmup must be > 0, got %s", warmup)
		}
		if steady <= 0 {
			return fmt.Errorf("--open-loop-steady must be > 0, got %s", steady)
		}
		if !(share > 0 && share <= 1) {
			return fmt.Errorf("--open-loop-threshold-share must be in (0, 1], got %v", share)
		}
		if searches < 1 || searches > sweep.MaxSearches {
			return fmt.Errorf("--open-loop-searches must be 1 to %d, got %d", sweep.MaxSearches, searches)
		}
	default:
		return fmt.Errorf("--arrivals must be %s or %s, got %q", knee.ArrivalsClosedLoop, knee.ArrivalsPoisson, arrivals)
	}
	return nil
}

// relativeTo is path as a link from the report's directory.
func relativeTo(reportPath, path string) string {
	if reportPath == "" {
		return path
	}
	rel, err := filepath.Rel(filepath.Dir(reportPath), path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(rel)
}

// readAPIKey reads the key from file, else from the first set variable of
// apiKeyEnv; "" when there is none. The key is never logged.
func readAPIKey(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--api-key-file: %w", err)
		}
		key := strings.TrimSpace(string(b))
		if key == "" {
			return "", fmt.Errorf("--api-key-file %s is empty", file)
		}
		return key, nil
	}
	for _, v := range apiKeyEnv {
		if key := strings.TrimSpace(os.Getenv(v)); key != "" {
			return key, nil
		}
	}
	return "", nil
}

// isTerminal reports whether w is a terminal, where a progress bar can redraw.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// joinSpeeds is the speeds as --speed-model takes them (sweep and sim knee).
func joinSpeeds(speeds []float64) string {
	s := make([]string, len(speeds))
	for i, e := range speeds {
		s[i] = strconv.FormatFloat(e, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}
