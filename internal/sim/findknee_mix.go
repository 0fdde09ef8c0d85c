package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/kneewatch/kneewatch/knee"
)

// ErrMixModel is returned, with the profile measured at its own mix (and no
// mix model), when too few scaled mixes had a knee to fit the model to.
var ErrMixModel = errors.New("cannot fit the mix model")

// withMixModel measures the knee again at each of cfg.MixScales (the
// workload scaled by workload.Generator.Scaled, within the preset's
// max_model_len), the same way as p's knee, and attaches the knee.MixModel
// fitted to those knees and p's own. A scaled mix whose SLO cannot be met at
// all, or whose knee is only a lower bound (see onlyALowerBound), is left
// out with a warning; the model needs knee.MinMixPoints that remain.
func withMixModel(ctx context.Context, cfg KneeConfig, p knee.Profile) (knee.Profile, error) {
	log := cfg.logger()
	own, err := knee.MixPointOf(&p, knee.MixScale{Prompt: 1, Output: 1})
	if err != nil {
		return p, err
	}
	points := []knee.MixPoint{own}
	for _, s := range cfg.MixScales {
		if s == (knee.MixScale{Prompt: 1, Output: 1}) {
			continue
		}
		gen, err := cfg.Workload.Scaled(s.Prompt, s.Output, cfg.Engine.Preset.MaxModelLen)
		if err != nil {
			return p, fmt.Errorf("mix scale %s: %w", s, err)
		}
		sub := cfg
		sub.Workload = gen
		q, ok, err := modelKnee(ctx, log, sub, "mix", "mix_scale", s.String())
		if err != nil {
			return p, fmt.Errorf("mix scale %s: %w", s, err)
		}
		if !ok {
			continue
		}
		pt, err := knee.MixPointOf(&q, s)
		if err != nil {
			return p, fmt.Errorf("mix scale %s: %w", s, err)
		}
		points = append(points, pt)
	}
	points, left := knee.LeaveOutRisingMixPoints(points)
	for _, pt := range left {
		log.Warn("the mix model leaves out a scaled mix whose knee rate reads above a lighter mix's",
			"mix_scale", knee.MixScale{Prompt: pt.PromptScale, Output: pt.OutputScale}.String(), "requests_per_second", pt.RequestsPerSecond)
	}
	m, err := knee.FitMixModel(points, p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens)
	if err != nil {
		return p, fmt.Errorf("%w: knees at %d mixes: %w", ErrMixModel, len(points), err)
	}
	p.MixModel = &m
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("the profile with its mix model does not validate: %w", err)
	}
	return p, nil
}

// modelKnee measures the knee again for a model's variant (sub: cfg with
// another SLO or workload) the same way, and says whether it counts toward
// the model: a variant whose SLO cannot be met at all, or whose knee is only
// a lower bound, is left out with a warning naming the model and the
// variant (variant: log attributes). Both models' reruns share this rule.
func modelKnee(ctx context.Context, log *slog.Logger, sub KneeConfig, model string, variant ...any) (knee.Profile, bool, error) {
	sub.MixScales, sub.Speeds = nil, nil
	q, err := FindKnee(ctx, sub)
	switch {
	case errors.Is(err, ErrSLOUnreachable) || errors.Is(err, ErrOpenLoopSLOUnreachable):
		log.Warn("the "+model+" model leaves out a variant whose SLO cannot be met", append(variant, "err", err)...)
		return q, false, nil
	case err != nil:
		return q, false, err
	case onlyALowerBound(q):
		log.Warn("the "+model+" model leaves out a variant whose knee lies beyond --max-concurrency",
			append(variant, "max_concurrency", sub.MaxConcurrency)...)
		return q, false, nil
	}
	return q, true, nil
}

// logger is cfg.Logger, or one that discards.
func (cfg KneeConfig) logger() *slog.Logger {
	if cfg.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return cfg.Logger
}

// onlyALowerBound reports whether q's knee is only a lower bound of the
// true one: the closed-loop search met the SLO up to MaxConcurrency, and
// the knee is closed-loop or the Poisson search kept the SLO up to the top
// of its bracket (the closed-loop knee's rate). A Poisson knee found below
// that is a knee even when the closed-loop one was not.
func onlyALowerBound(q knee.Profile) bool {
	if !q.Metadata.Partial {
		return false
	}
	if q.Knee.Arrivals != knee.ArrivalsPoisson {
		return true
	}
	pt, ok := knee.PointAt(q.Points, q.Knee.ClosedLoopConcurrency)
	// Trial rates are rounded to 1e-6 requests/s (see findPoissonKnee).
	return !ok || q.Knee.RequestsPerSecond >= pt.RequestsPerSecond-2e-6
}
