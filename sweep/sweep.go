package sweep

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
	"github.com/kneewatch/kneewatch/workload"
)

// Defaults for Config fields left zero.
const (
	DefaultMaxConcurrency = 256
	DefaultPrecision      = 0.1
)

// DefaultBreakProbes is how many refinement levels a sweep with Poisson
// arrivals measures after its doubling's first break, for a point of the
// curve near the knee (measure.Search.BreakProbes). None saves the most
// time, but kneewatch reads its load and speed on the curve, and a curve
// with only the doubling's points near the knee read worse: given such a
// profile without models, on the tune half's ramp-slow, plateau-safe,
// square-safe and throttle-step scenarios, the headroom error p95 was
// 0.112, 0.151, 0.119 and 0.177 against 0.079, 0.078, 0.079 and 0.161 with
// the refined curve; with one probe 0.085, 0.086, 0.093 and 0.162. Over the
// suite's 15 deployments whose knee serves ≥ 1 request/s, 4 seeds each,
// sweeps done within 20 minutes: refined 39 of 60, no probe 54, one probe
// 47; knee within ±10% of the truth: 48, 47 and 50
// (TestSweepCoarseBeforePoisson).
const DefaultBreakProbes = 1

// DefaultMinRequests is the smallest steady-state window for an SLO
// quantile q: enough requests that two lie beyond the quantile, so it
// interpolates between the 2nd and 3rd slowest instead of being the single
// worst request, which jumps from run to run (200 for a p99, 2000 for a
// p99.9), and never fewer than 100 so a p50 and throughput are stable too.
func DefaultMinRequests(q float64) int {
	return max(100, int(math.Ceil(2/(1-q)-1e-9)))
}

// WindowRequests is the window for concurrency c: at least minRequests,
// and four completions per worker, so every slot samples the mix's tail.
func WindowRequests(c, minRequests int) int { return max(minRequests, 4*c) }

// Config configures a sweep.
type Config struct {
	Client   *Client
	Workload *workload.Generator
	// Seed derives each level's workload stream, so a level's draws do not
	// depend on which levels ran before it.
	Seed uint64
	SLO  knee.SLO
	// MaxConcurrency ends the doubling (0 means DefaultMaxConcurrency).
	MaxConcurrency int
	// Precision is the relative width of the final bracket (0 means DefaultPrecision).
	Precision float64
	// MaxLevels caps the levels measured (0 means no cap).
	MaxLevels int
	// MinRequests is the smallest window (0 means DefaultMinRequests).
	MinRequests int
	// Warmup completions per level (0 means DefaultWarmup).
	Warmup int
	// LevelTimeout ends a level that has not filled its window (0 means none).
	LevelTimeout time.Duration
	// Metrics, when set, are scraped while each level runs.
	Metrics *Metrics
	// MetricsGuessed says Metrics.EngineURL was derived from the target,
	// not given: if unreadable it is dropped with a warning.
	MetricsGuessed bool
	// Name is the profile's name (default: model and workload).
	Name string
	// GPU and EngineVersion fill the profile's match when the metrics do not.
	GPU, EngineVersion string
	// TargetLabel is how the profile names the target (default the base URL).
	TargetLabel string
	Logger      *slog.Logger
	Progress    Progress
	// Clock stamps the profile (nil means time.Now).
	Clock func() time.Time
	// Arrivals is how the knee is measured: empty or knee.ArrivalsClosedLoop
	// reports the closed-loop search's knee; knee.ArrivalsPoisson follows
	// that search with steady Poisson trials (see OpenLoop) and reports the
	// largest rate that kept the SLO.
	Arrivals knee.Arrivals
	// OpenLoop configures the Poisson trials.
	OpenLoop OpenLoopConfig
	// MixScales, when set, run the search again at the workload scaled by
	// each factor pair and attach the fitted knee.MixModel to the profile
	// (see withMixModel).
	MixScales []knee.MixScale
	// Speeds, when set, run the search again under the SLO's thresholds ×
	// each speed and attach the knee.SpeedModel of those knees: where the
	// knee lies on a GPU that much slower (see withSpeedModel).
	Speeds []float64
	// MaxModelLen caps a scaled mix's longest request (prompt plus
	// output), as the server's --max-model-len does; 0 means no cap.
	MaxModelLen int
	// Early is the sequential rule that lets a level stop before its window
	// fills (nil means measure.DefaultEarly; the zero Early never stops early).
	Early *measure.Early

	// modelVariant marks the rerun of a model's variant (see modelKnee):
	// its SLO is the profile's, or one a speed scaled that kneewatch serve
	// never judges, so the profile's SLO edges are not logged again.
	modelVariant bool
}

func (cfg *Config) early() measure.Early {
	if cfg.Early == nil {
		return measure.DefaultEarly
	}
	return *cfg.Early
}

// Outcome is what a sweep measured.
type Outcome struct {
	Target Target
	// Levels in the order they ran.
	Levels []Level
	// Reason says why the sweep stopped.
	Reason      string
	Interrupted bool
	// Profile is the knee profile; nil when no level met the SLO.
	Profile  *knee.Profile
	Started  time.Time
	Finished time.Time

	// With Poisson arrivals: the open-loop trials in the order they ran,
	// why their search stopped, and the closed-loop search's last level
	// that kept the SLO (the profile's knee is then the poisson one).
	Trials []Trial
	// SearchBests holds, for each rate search finished, the index in
	// Trials of its best kept trial (−1 when it kept none); the knee is
	// the median search's (see Config.searchRate).
	SearchBests    []int
	OpenLoopReason string
	ClosedLoopKnee *knee.Knee
	// StartConcurrency is the closed-loop level the trials' rates start
	// from: the lowest broken level, or the last kept one where the broken
	// one's throughput collapsed (OpenLoopStart). StartRate is its request
	// rate, requests/s; a trial's Fraction is of it.
	StartConcurrency int
	StartRate        float64
	// ClosedLoopEstimate is the closed-loop knee the profile records beside
	// the poisson one: where the SLO margin crosses 1 between the last kept
	// and the lowest broken level, rounded down (measure.Search.Estimate).
	ClosedLoopEstimate float64
	// ThresholdShare is the share of each SLO threshold the trials were
	// judged at (OpenLoopConfig.ThresholdShare).
	ThresholdShare float64
}

// Errors Run may return together with an Outcome worth writing out.
var (
	ErrInterrupted    = errors.New("sweep interrupted")
	ErrSLOUnreachable = errors.New("the SLO is not met even at concurrency 1")
)

// Run checks the target (see Preflight), then measures levels as Search
// directs and builds the knee profile. When ctx is cancelled it stops at
// once, discards the level in progress, and returns what was measured with
// the profile marked partial and an error wrapping ErrInterrupted. The
// Outcome is non-nil whenever the preflight passed.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	clock := cfg.Clock
	search, err := measure.NewSearch(cfg.MaxConcurrency, cfg.Precision, cfg.MaxLevels)
	if err != nil {
		return nil, err
	}
	// The Poisson trials need only a load above the knee to start from
	// (see runPoisson).
	search.StopAtBreak, search.BreakProbes = cfg.Arrivals == knee.ArrivalsPoisson, DefaultBreakProbes
	// No saturation stop: a flat throughput with the SLO still met is not the
	// knee (on the suite it put it up to 35% low); the levels past it are
	// cheap to break with early stopping.
	target, err := Preflight(ctx, cfg.Client, cfg.Metrics, cfg.MetricsGuessed)
	for _, w := range target.Warnings {
		log.Warn(w)
	}
	if err != nil {
		return nil, err
	}
	log.Info("target checks passed", "target", cfg.targetLabel(), "model", cfg.Client.Model,
		"probe_ttft", target.Probe.TTFT.Round(time.Microsecond), "probe_tokens", target.Probe.OutputTokens, "engine", target.Engine, "gpu", target.GPU)
	// The sweep measures latency client-side, exactly; the profile's SLO
	// is later judged on the engine's buckets by kneewatch serve.
	if !cfg.modelVariant {
		collector.LogSLOEdges(log, target.Engine, cfg.SLO, "applies_to", "kneewatch serve's attainment of this profile's SLO")
	}

	out := &Outcome{Target: target, Started: clock()}
	ramp := target.Probe.E2E
	for {
		step, ok := search.Next()
		if !ok {
			break
		}
		c := step.Concurrency
		window := WindowRequests(c, cfg.MinRequests)
		warm := cfg.Warmup
		if warm <= 0 {
			warm = DefaultWarmup(c)
		}
		cfg.Progress.StartLevel(len(out.Levels)+1, c, warm+window)
		lv, err := RunLevel(ctx, cfg.Client, LevelConfig{
			Concurrency: c, Warmup: warm, Window: window, Ramp: ramp, Timeout: cfg.LevelTimeout,
			Next: cfg.nextFunc(c), SLO: cfg.SLO, Metrics: cfg.Metrics, OnCompletion: cfg.Progress.Update,
			Early: cfg.early(), MayScreen: step.MayScreen,
		})
		cfg.Progress.EndLevel()
		if err != nil {
			if ctx.Err() != nil {
				out.Interrupted = true
				out.Reason = fmt.Sprintf("interrupted during concurrency %d (that level is discarded)", c)
				break
			}
			return out, err
		}
		out.Levels = append(out.Levels, lv)
		logLevel(log, cfg.SLO, lv)
		search.Record(c, measure.Outcome{Good: lv.Point.MeetsSLO, Margin: lv.Margin,
			TokensPerSecond: lv.Point.OutputTokensPerSecond, Screened: lv.Stopped == measure.Screened})
		if lv.MeanE2E > 0 {
			ramp = lv.MeanE2E
		}
	}
	out.Finished = clock()
	if !out.Interrupted {
		out.Reason = search.Done()
	}
	log.Info("sweep finished", "reason", out.Reason, "levels", len(out.Levels), "took", out.Finished.Sub(out.Started).Round(time.Millisecond))

	prof, perr := cfg.profile(out, search.LowerBound())
	if perr == nil {
		out.Profile = prof
	}
	switch {
	case out.Interrupted:
		return out, fmt.Errorf("%w: %s", ErrInterrupted, out.Reason)
	case perr != nil:
		return out, perr
	case cfg.Arrivals != knee.ArrivalsPoisson:
		return out, cfg.withModels(ctx, out)
	}
	if err := cfg.runPoisson(ctx, out, search); err != nil {
		return out, err
	}
	log.Info("open-loop search finished", "reason", out.OpenLoopReason, "trials", len(out.Trials), "took", out.Finished.Sub(out.Started).Round(time.Millisecond))
	if out.Interrupted {
		return out, fmt.Errorf("%w: %s", ErrInterrupted, out.OpenLoopReason)
	}
	return out, cfg.withModels(ctx, out)
}

// withModels attaches the speed model, then the mix model, each when asked
// for (see withSpeedModel and withMixModel).
func (cfg *Config) withModels(ctx context.Context, out *Outcome) error {
	if err := cfg.withSpeedModel(ctx, out); err != nil {
		return err
	}
	return cfg.withMixModel(ctx, out)
}

func (cfg *Config) defaults() error {
	switch {
	case cfg.Client == nil:
		return errors.New("sweep: no client")
	case cfg.Workload == nil:
		return errors.New("sweep: no workload")
	case cfg.SLO.TTFT <= 0:
		return fmt.Errorf("sweep: the TTFT threshold must be > 0, got %s", cfg.SLO.TTFT)
	case cfg.SLO.TPOT <= 0:
		return fmt.Errorf("sweep: the TPOT threshold must be > 0, got %s", cfg.SLO.TPOT)
	case !(cfg.SLO.Quantile > 0 && cfg.SLO.Quantile < 1):
		return fmt.Errorf("sweep: the SLO quantile must be in (0,1), got %v", cfg.SLO.Quantile)
	case cfg.MinRequests < 0:
		return fmt.Errorf("sweep: min requests must be ≥ 0, got %d", cfg.MinRequests)
	case cfg.Arrivals != "" && cfg.Arrivals != knee.ArrivalsClosedLoop && cfg.Arrivals != knee.ArrivalsPoisson:
		return fmt.Errorf("sweep: arrivals must be %q or %q, got %q", knee.ArrivalsClosedLoop, knee.ArrivalsPoisson, cfg.Arrivals)
	}
	if err := cfg.OpenLoop.defaults(); err != nil {
		return err
	}
	if err := cfg.early().Validate(); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if cfg.MaxConcurrency == 0 {
		cfg.MaxConcurrency = DefaultMaxConcurrency
	}
	if cfg.Precision == 0 {
		cfg.Precision = DefaultPrecision
	}
	if cfg.MinRequests == 0 {
		cfg.MinRequests = DefaultMinRequests(cfg.SLO.Quantile)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Progress == nil {
		cfg.Progress = noProgress{}
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Client.Prompt == nil {
		cfg.Client.Prompt = workload.UniquePrompts()
	}
	return nil
}

func (cfg *Config) targetLabel() string {
	if cfg.TargetLabel != "" {
		return cfg.TargetLabel
	}
	return cfg.Client.BaseURL
}

// nextFunc returns a concurrency-safe request source for level c, drawing
// from the workload reseeded for c (a trace replays from its start).
func (cfg *Config) nextFunc(c int) func() Request {
	gen := cfg.Workload.WithSeed(levelSeed(cfg.Seed, c))
	var mu sync.Mutex
	return func() Request {
		mu.Lock()
		w := gen.Next()
		mu.Unlock()
		return Request{PromptTokens: w.PromptTokens, MaxTokens: w.OutputTokens}
	}
}

// levelSeed mixes the run's seed with the level (splitmix64's finaliser).
func levelSeed(seed uint64, c int) uint64 {
	z := seed + uint64(c)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func logLevel(log *slog.Logger, slo knee.SLO, lv Level) {
	pt := lv.Point
	q := measure.QuantileLabel(slo.Quantile)
	verdict := "meets the SLO"
	if !pt.MeetsSLO {
		verdict = "breaks the SLO"
	}
	attrs := []any{
		"concurrency", pt.Concurrency, "verdict", verdict,
		"output_tok_s", math.Round(pt.OutputTokensPerSecond), "goodput_tok_s", math.Round(pt.GoodputTokensPerSecond),
		"ttft_" + q, time.Duration(lv.TTFTAtQuantile * 1e9).Round(time.Microsecond),
		"tpot_" + q, time.Duration(lv.TPOTAtQuantile * 1e9).Round(time.Microsecond),
		"errors", lv.Errors, "requests", pt.Requests, "window", lv.Duration.Round(time.Millisecond),
	}
	if lv.CutShort {
		attrs = append(attrs, "cut_short", true)
	}
	if lv.StoppedWhy != "" {
		attrs = append(attrs, "stopped_early", lv.StoppedWhy)
	}
	log.Info("level measured", attrs...)
	for _, p := range lv.MetricProblems {
		log.Warn("metrics incomplete for this level", "concurrency", pt.Concurrency, "problem", p)
	}
}

// profile builds the knee profile from the measured levels; the knee is
// knee.FindFromPoints's: the highest level such that it and every level
// below it met the SLO. A knee between two measured levels is never
// reported: the profile says what was measured.
func (cfg *Config) profile(out *Outcome, lowerBound bool) (*knee.Profile, error) {
	if len(out.Levels) == 0 {
		return nil, errors.New("no level was measured")
	}
	info := cfg.Workload.Info()
	p := &knee.Profile{
		APIVersion: knee.APIVersion,
		Kind:       knee.Kind,
		Metadata: knee.Metadata{
			Name:      cfg.profileName(info),
			CreatedAt: out.Finished.UTC(),
			Partial:   out.Interrupted || lowerBound,
		},
		Match: knee.Match{
			Model:         cfg.Client.Model,
			GPU:           cmp.Or(out.Target.GPU, cfg.GPU),
			Engine:        out.Target.Engine,
			EngineVersion: cfg.EngineVersion,
		},
		SLO: cfg.SLO,
		Workload: knee.WorkloadInfo{
			Mix:              info.Mix,
			Source:           info.Source,
			MeanPromptTokens: info.MeanPromptTokens,
			MeanOutputTokens: info.MeanOutputTokens,
			P999PromptTokens: math.Round(info.P999PromptTokens),
		},
		Sweep: knee.SweepInfo{
			Tool:       "kneewatch sweep",
			Target:     cfg.targetLabel(),
			StartedAt:  out.Started.UTC(),
			FinishedAt: out.Finished.UTC(),
		},
	}
	// The means live traffic is compared with are the token counts the
	// server reported (its own tokenizer), not the ones asked for.
	var n, prompt, output float64
	var prompts, outputs []int
	for _, lv := range out.Levels {
		p.Sweep.Levels = append(p.Sweep.Levels, int(lv.Point.Concurrency))
		// A screened level measured again in full (the knee rested on it)
		// is one point: the full measurement.
		p.Points = slices.DeleteFunc(p.Points, func(pt knee.Point) bool { return pt.Concurrency == lv.Point.Concurrency })
		p.Points = append(p.Points, lv.Point)
		for _, r := range lv.Results {
			if r.Err == nil {
				n, prompt, output = n+1, prompt+float64(r.PromptTokens), output+float64(r.OutputTokens)
				prompts = append(prompts, r.PromptTokens)
				outputs = append(outputs, r.OutputTokens)
			}
		}
	}
	if n > 0 {
		p.Workload.MeanPromptTokens = math.Round(prompt/n*1000) / 1000
		p.Workload.MeanOutputTokens = math.Round(output/n*1000) / 1000
		// The lengths' spread as served, for the same reason; it
		// replaces the generator's (see knee.WorkloadInfo).
		p.Workload.PromptTokensCV = math.Round(workload.LengthCV(prompts)*1000) / 1000
		p.Workload.OutputTokensCV = math.Round(workload.LengthCV(outputs)*1000) / 1000
		p.Workload.P999PromptTokens = promptTail(prompts)
	}
	slices.SortFunc(p.Points, func(a, b knee.Point) int { return cmp.Compare(a.Concurrency, b.Concurrency) })
	k, err := knee.FindFromPoints(p.Points, cfg.SLO)
	if err != nil {
		lv := out.Levels[0]
		return nil, fmt.Errorf("%w: %s TTFT %s (SLO %s), %s TPOT %s (SLO %s), error rate %.1f%%", ErrSLOUnreachable,
			measure.QuantileLabel(cfg.SLO.Quantile), time.Duration(lv.TTFTAtQuantile*1e9).Round(time.Microsecond), cfg.SLO.TTFT,
			measure.QuantileLabel(cfg.SLO.Quantile), time.Duration(lv.TPOTAtQuantile*1e9).Round(time.Microsecond), cfg.SLO.TPOT,
			100*lv.Point.ErrorRate)
	}
	p.Knee = k
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("the measured profile does not validate (a bug): %w", err)
	}
	return p, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// profileName is the configured name, or "<model base name>-<mix name>".
func (cfg *Config) profileName(info workload.Info) string {
	if cfg.Name != "" {
		return cfg.Name
	}
	model := cfg.Client.Model
	if i := strings.LastIndex(model, "/"); i >= 0 {
		model = model[i+1:]
	}
	return strings.Trim(unsafeName.ReplaceAllString(model+"-"+info.Mix.Name, "-"), "-")
}

// promptTail is the 99.9th percentile of the prompt lengths the server
// reported (their longest, from fewer than 1,000 requests), the reference
// a live prompt tail is read against; 0 from fewer than 100 requests.
func promptTail(lengths []int) float64 {
	if len(lengths) < 100 {
		return 0
	}
	return workload.LengthQuantile(lengths, 0.999)
}
