package sweep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// ErrMixModel is returned, with the outcome and its profile (without a mix
// model), when too few scaled mixes had a knee to fit the model to.
var ErrMixModel = errors.New("cannot fit the mix model")

// withMixModel runs the whole search again (closed-loop, then Poisson when
// cfg.Arrivals asks for it) at each of cfg.MixScales of the workload, and
// attaches the knee.MixModel fitted to those knees and the profile's own
// (see knee.MixModel). A scaled mix whose SLO cannot be met at all, or
// whose knee is only a lower bound, is left out with a warning, and so is
// one whose knee rate reads above a lighter mix's (knee.LeaveOutRisingMixPoints). On
// interruption the profile stays without a mix model. Nothing to do
// without scales or a profile.
func (cfg *Config) withMixModel(ctx context.Context, out *Outcome) error {
	if len(cfg.MixScales) == 0 || out.Profile == nil {
		return nil
	}
	log := cfg.Logger
	own, err := knee.MixPointOf(out.Profile, knee.MixScale{Prompt: 1, Output: 1})
	if err != nil {
		return err
	}
	points := []knee.MixPoint{own}
	for _, s := range cfg.MixScales {
		if s == (knee.MixScale{Prompt: 1, Output: 1}) {
			continue
		}
		gen, err := cfg.Workload.Scaled(s.Prompt, s.Output, cfg.MaxModelLen)
		if err != nil {
			return fmt.Errorf("mix scale %s: %w", s, err)
		}
		sub := *cfg
		sub.Workload = gen
		log.Info("measuring the knee at a scaled mix", "mix_scale", s.String(),
			"mean_prompt_tokens", gen.Info().MeanPromptTokens, "mean_output_tokens", gen.Info().MeanOutputTokens)
		res, ok, err := modelKnee(ctx, sub, out, "mix", "mix_scale", s.String())
		if err != nil {
			return fmt.Errorf("mix scale %s: %w", s, err)
		}
		if !ok {
			continue
		}
		pt, err := knee.MixPointOf(res.Profile, s)
		if err != nil {
			return fmt.Errorf("mix scale %s: %w", s, err)
		}
		points = append(points, pt)
	}
	p := out.Profile
	points, left := knee.LeaveOutRisingMixPoints(points)
	for _, pt := range left {
		log.Warn("the mix model leaves out a scaled mix whose knee rate reads above a lighter mix's: longer prompts cannot raise it, so one of the two searches read high",
			"mix_scale", knee.MixScale{Prompt: pt.PromptScale, Output: pt.OutputScale}.String(), "requests_per_second", pt.RequestsPerSecond)
	}
	m, err := knee.FitMixModel(points, p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens)
	if err != nil {
		return fmt.Errorf("%w: knees at %d mixes: %w", ErrMixModel, len(points), err)
	}
	withModel := *p
	withModel.MixModel = &m
	if err := withModel.Validate(); err != nil {
		return fmt.Errorf("the profile with its mix model does not validate: %w", err)
	}
	out.withModel(&withModel, cfg.Clock())
	return nil
}

// withModel makes p, the profile with a model attached, the outcome's, and
// the sweep finished at now: a sweep ends with its models' knees, and the
// profile says when.
func (out *Outcome) withModel(p *knee.Profile, now time.Time) {
	out.Finished = now
	p.Sweep.FinishedAt = now.UTC()
	out.Profile = p
}

// modelKnee runs the whole search again for a model's variant (sub: the
// config with another SLO or workload), and says whether its knee counts
// toward the model: a variant whose SLO cannot be met at all, or whose knee
// is only a lower bound, is left out with a warning naming the model and
// the variant (variant: log attributes). An interruption marks out
// interrupted and returns ErrInterrupted: the profile then stays without
// the model. Both models' reruns share this rule.
func modelKnee(ctx context.Context, sub Config, out *Outcome, model string, variant ...any) (*Outcome, bool, error) {
	sub.MixScales, sub.Speeds, sub.modelVariant = nil, nil, true
	// One rate search a variant: the models are fitted over several
	// variants' knees, whose draws differ anyway, and a repeat of each
	// would multiply the longest part of the sweep.
	sub.OpenLoop.Searches = 1
	log := sub.Logger
	res, err := Run(ctx, sub)
	switch {
	case ctx.Err() != nil || errors.Is(err, ErrInterrupted):
		out.Interrupted = true
		return nil, false, fmt.Errorf("%w: during a knee of the %s model; the profile has no %s model", ErrInterrupted, model, model)
	case errors.Is(err, ErrSLOUnreachable) || errors.Is(err, ErrPoissonUnreachable):
		log.Warn("the "+model+" model leaves out a variant whose SLO cannot be met", append(variant, "err", err)...)
		return nil, false, nil
	case err != nil:
		return nil, false, err
	case res.kneeOnlyALowerBound():
		log.Warn("the "+model+" model leaves out a variant whose knee lies beyond --max-concurrency", variant...)
		return nil, false, nil
	}
	return res, true, nil
}

// kneeOnlyALowerBound reports whether the outcome's knee is only a lower
// bound of the true one: the closed-loop search kept the SLO up to
// --max-concurrency (the profile is partial), and the knee is closed-loop
// or the Poisson search kept the SLO at the top of its bracket. A poisson
// knee below the top of its bracket is a knee even when the closed-loop
// one was not.
func (o *Outcome) kneeOnlyALowerBound() bool {
	p := o.Profile
	return p.Metadata.Partial && (p.Knee.Arrivals != knee.ArrivalsPoisson || p.Knee.RequestsPerSecond >= o.StartRate*(1-1e-3))
}
