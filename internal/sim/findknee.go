package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
	"github.com/kneewatch/kneewatch/workload"
)

// KneeConfig configures FindKnee.
type KneeConfig struct {
	Engine   Config
	Workload *workload.Generator
	SLO      knee.SLO
	// MaxConcurrency ends the doubling sweep; 0 means 256.
	MaxConcurrency int
	// Seed makes the run reproducible: level c draws its requests from
	// Workload.WithSeed(a value derived from Seed and c), so a level's result
	// does not depend on which levels ran before it.
	Seed uint64
	// WarmupRequests and WindowRequests are passed to every level (0 = RunLevel's defaults).
	WarmupRequests, WindowRequests int
	// Clock stamps the profile's creation and sweep times; nil means time.Now.
	// Only those stamps use it: the sweep itself runs in virtual time.
	Clock func() time.Time
	// Arrivals says how the knee is measured: closed-loop (empty, the
	// default) or poisson (see FindKnee).
	Arrivals knee.Arrivals
	// OpenLoop shapes the poisson search; ignored for closed-loop.
	OpenLoop OpenLoopConfig
	// OpenLoopVerdict is what each of its trials is held to beyond the
	// windowed SLO at the thresholds (see TrialVerdict; the zero value:
	// nothing more).
	OpenLoopVerdict TrialVerdict
	// Logger reports each poisson trial (debug) and a knee moved onto the
	// curve (warning); nil discards.
	Logger *slog.Logger
	// MixScales, when set, also measure the knee at the workload scaled by
	// each factor pair, and attach the knee.MixModel fitted to those knees
	// (see withMixModel); knee.DefaultMixScales is a small default set.
	MixScales []knee.MixScale
	// Speeds, when set, also measure the knee under the SLO's thresholds ×
	// each speed, and attach the knee.SpeedModel of those knees: where the
	// knee lies on a GPU that much slower (see withSpeedModel);
	// knee.DefaultSpeeds is a small default set.
	Speeds []float64
}

// ErrSLOUnreachable is returned (with the profile of what was measured) when
// even concurrency 1 breaks the SLO.
var ErrSLOUnreachable = errors.New("the SLO is not met even at concurrency 1")

// FindKnee measures the simulator's true knee in virtual time, searching as
// `kneewatch sweep` does (measure.Search): closed-loop levels 1, 2, 4, … up
// to MaxConcurrency, one level past the first that breaks the SLO (so the
// profile shows the flattening), then refinement between the last good and
// the first bad level, interpolating on the log of the SLO margin, down to
// integer concurrency. The knee is the largest concurrency found meeting
// both SLO percentiles: it meets the SLO and knee+1 does not (unless the knee
// is MaxConcurrency, in which case the profile is marked partial because the
// true knee may lie beyond). The same inputs always give the same profile,
// except for the wall-clock stamps from Clock.
//
// The knee's limiting resource is kv_cache when its KV usage is at least
// 0.9 or it preempted, else compute.
//
// With Arrivals poisson, the knee is then measured again the way users send
// traffic (see findPoissonKnee); the points and levels stay the closed-loop
// ones, the curve kneewatch reads throughput on. With MixScales, the whole
// search runs again at each scaled mix, and the profile gets the mix model
// fitted to the knees (see withMixModel). With Speeds, it runs again under
// thresholds × each speed, and the profile gets the speed model of those
// knees (see withSpeedModel).
func FindKnee(ctx context.Context, cfg KneeConfig) (knee.Profile, error) {
	clock := cfg.Clock
	if clock == nil {
		clock = time.Now
	}
	var openLoop OpenLoopConfig
	switch cfg.Arrivals {
	case "", knee.ArrivalsClosedLoop:
	case knee.ArrivalsPoisson:
		var err error
		if openLoop, err = cfg.OpenLoop.withDefaults(); err != nil {
			return knee.Profile{}, err
		}
	default:
		return knee.Profile{}, fmt.Errorf("unknown arrivals %q (known: %s, %s)", cfg.Arrivals, knee.ArrivalsClosedLoop, knee.ArrivalsPoisson)
	}
	maxC := cfg.MaxConcurrency
	if maxC == 0 {
		maxC = 256
	}
	if maxC < 1 {
		return knee.Profile{}, fmt.Errorf("max concurrency must be ≥ 1, got %d", maxC)
	}
	if cfg.Workload == nil {
		return knee.Profile{}, errors.New("no workload generator")
	}
	if err := validateSLO(cfg.SLO); err != nil {
		return knee.Profile{}, err
	}
	if err := cfg.Engine.Preset.Validate(); err != nil {
		return knee.Profile{}, err
	}
	started := clock()

	// The search is the sweep's (measure.Search), set for the truth: it
	// refines to integer concurrency, measures one doubling past the first
	// break so the profile shows the flattening, and keeps doubling on a
	// flat throughput while the SLO holds. Levels are never screened or
	// stopped early: virtual time makes full windows cheap.
	search, err := measure.NewSearch(maxC, integerPrecision, 0)
	if err != nil {
		return knee.Profile{}, err
	}
	search.PastBreak = 1
	levels, measured, err := DriveSearch(ctx, search, func(step measure.Step) LevelConfig {
		return LevelConfig{
			Engine:         cfg.Engine,
			Workload:       cfg.Workload.WithSeed(levelSeed(cfg.Seed, step.Concurrency)),
			SLO:            cfg.SLO,
			WarmupRequests: cfg.WarmupRequests,
			WindowRequests: cfg.WindowRequests,
		}
	})
	if err != nil {
		return knee.Profile{}, err
	}
	points := map[int]knee.Point{}
	for i, lv := range measured {
		points[levels[i]] = lv.Point
	}
	lo, hi := search.Bracket()

	info := cfg.Workload.Info()
	p := knee.Profile{
		APIVersion: knee.APIVersion,
		Kind:       knee.Kind,
		Metadata: knee.Metadata{
			Name:      cfg.Engine.Preset.Name + "-" + info.Mix.Name,
			CreatedAt: started.UTC(),
			Partial:   hi == 0,
		},
		Match: knee.Match{
			Model:  cfg.Engine.Preset.Model,
			GPU:    cfg.Engine.Preset.GPU,
			Engine: "vllm", // the simulator speaks vLLM's API and metrics
		},
		SLO: cfg.SLO,
		Workload: knee.WorkloadInfo{
			Mix:              info.Mix,
			Source:           info.Source,
			MeanPromptTokens: info.MeanPromptTokens,
			MeanOutputTokens: info.MeanOutputTokens,
			P999PromptTokens: math.Round(info.P999PromptTokens),
			PromptTokensCV:   math.Round(info.PromptTokensCV*1000) / 1000,
			OutputTokensCV:   math.Round(info.OutputTokensCV*1000) / 1000,
		},
		Sweep: knee.SweepInfo{
			Tool:       "kneewatch sim knee",
			Target:     cfg.Engine.Preset.Name,
			StartedAt:  started.UTC(),
			FinishedAt: clock().UTC(),
			Levels:     levels,
		},
	}
	for _, pt := range points {
		p.Points = append(p.Points, pt)
	}
	slices.SortFunc(p.Points, func(a, b knee.Point) int { return cmp.Compare(a.Concurrency, b.Concurrency) })
	if lo == 0 {
		return p, fmt.Errorf("%w: p%g TTFT %.3fs (SLO %s), p%g TPOT %.4fs (SLO %s)", ErrSLOUnreachable,
			cfg.SLO.Quantile*100, points[1].TTFT.P99, cfg.SLO.TTFT.D(), cfg.SLO.Quantile*100, points[1].TPOT.P99, cfg.SLO.TPOT.D())
	}
	at := points[lo]
	p.Knee = knee.Knee{
		Concurrency:            at.Concurrency,
		OutputTokensPerSecond:  at.OutputTokensPerSecond,
		GoodputTokensPerSecond: at.GoodputTokensPerSecond,
		KVCacheUsage:           at.KVCacheUsage,
		LimitingResource:       knee.LimitingResource(at),
	}
	if cfg.Arrivals == knee.ArrivalsPoisson {
		var err error
		if p, err = findPoissonKnee(ctx, cfg, openLoop, p, clock); err != nil {
			return p, err
		}
	}
	if len(cfg.Speeds) > 0 {
		if p, err = withSpeedModel(ctx, cfg, p); err != nil {
			return p, err
		}
		p.Sweep.FinishedAt = clock().UTC()
	}
	if len(cfg.MixScales) == 0 {
		return p, nil
	}
	p, err = withMixModel(ctx, cfg, p)
	p.Sweep.FinishedAt = clock().UTC()
	return p, err
}

// integerPrecision makes measure.Search refine to a bracket of width 1.
const integerPrecision = 1e-9

// levelSeed derives a level's workload seed from the run's seed, so every
// level has its own reproducible stream (splitmix64 finaliser).
func levelSeed(seed uint64, c int) uint64 {
	z := seed + uint64(c)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
