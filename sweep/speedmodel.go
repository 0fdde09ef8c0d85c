package sweep

import (
	"context"
	"fmt"

	"github.com/kneewatch/kneewatch/knee"
)

// withSpeedModel runs the whole search again (closed-loop, then Poisson
// when cfg.Arrivals asks for it) under the SLO's thresholds × each of
// cfg.Speeds, and attaches the knee.SpeedModel of those knees: where the
// knee lies on a GPU at that speed (see knee.SpeedModel for why). A speed
// whose SLO cannot be met at all, whose knee is only a lower bound, or
// whose knee reads above the full-speed one (knee.SpeedPoint.RisesAbove) is
// left out with a warning; with none left the profile has no speed model.
// On interruption the profile stays without one. Nothing to do without
// speeds or a profile.
func (cfg *Config) withSpeedModel(ctx context.Context, out *Outcome) error {
	if len(cfg.Speeds) == 0 || out.Profile == nil {
		return nil
	}
	log := cfg.Logger
	var points []knee.SpeedPoint
	for _, e := range cfg.Speeds {
		sub := *cfg
		sub.SLO = knee.SLOAtSpeed(cfg.SLO, e)
		log.Info("measuring the knee for a slower GPU: the SLO's thresholds × its speed", "speed", e,
			"ttft", sub.SLO.TTFT, "tpot", sub.SLO.TPOT)
		res, ok, err := modelKnee(ctx, sub, out, "speed", "speed", e)
		if err != nil {
			return fmt.Errorf("speed %g: %w", e, err)
		}
		if !ok {
			continue
		}
		pt, err := knee.SpeedPointOf(res.Profile, e)
		if err != nil {
			return fmt.Errorf("speed %g: %w", e, err)
		}
		if pt.RisesAbove(out.Profile.Knee) {
			// A search's noise: leaving the point out keeps the model's
			// other speeds rather than failing the sweep at its end.
			log.Warn("the speed model leaves out a speed whose knee reads above the full-speed knee's request rate, the searches' noise",
				"speed", e, "requests_per_second", pt.RequestsPerSecond, "full_speed_requests_per_second", out.Profile.Knee.RequestsPerSecond)
			continue
		}
		points = append(points, pt)
	}
	if len(points) == 0 {
		return nil
	}
	withModel := *out.Profile
	withModel.SpeedModel = &knee.SpeedModel{Points: points}
	if err := withModel.Validate(); err != nil {
		return fmt.Errorf("the profile with its speed model does not validate: %w", err)
	}
	out.withModel(&withModel, cfg.Clock())
	return nil
}
