package sim

import (
	"context"
	"fmt"

	"github.com/kneewatch/kneewatch/knee"
)

// withSpeedModel measures the knee again under the SLO's thresholds × each
// of cfg.Speeds, the same way as p's knee, and attaches the knee.SpeedModel
// of those knees: where the knee lies on a GPU at that speed (see
// knee.SpeedModel for why). A speed whose SLO cannot be met at all, whose
// knee is only a lower bound, or whose knee reads above the full-speed one
// (knee.SpeedPoint.RisesAbove) is left out with a warning; with none left
// the profile has no speed model.
func withSpeedModel(ctx context.Context, cfg KneeConfig, p knee.Profile) (knee.Profile, error) {
	log := cfg.logger()
	var points []knee.SpeedPoint
	for _, e := range cfg.Speeds {
		sub := cfg
		sub.SLO = knee.SLOAtSpeed(cfg.SLO, e)
		q, ok, err := modelKnee(ctx, log, sub, "speed", "speed", e)
		if err != nil {
			return p, fmt.Errorf("speed %g: %w", e, err)
		}
		if !ok {
			continue
		}
		pt, err := knee.SpeedPointOf(&q, e)
		if err != nil {
			return p, fmt.Errorf("speed %g: %w", e, err)
		}
		if pt.RisesAbove(p.Knee) {
			// A search's noise: leaving the point out keeps the model's
			// other speeds rather than failing the sweep at its end.
			log.Warn("the speed model leaves out a speed whose knee reads above the full-speed knee's request rate, the searches' noise",
				"speed", e, "requests_per_second", pt.RequestsPerSecond, "full_speed_requests_per_second", p.Knee.RequestsPerSecond)
			continue
		}
		points = append(points, pt)
	}
	if len(points) == 0 {
		return p, nil
	}
	p.SpeedModel = &knee.SpeedModel{Points: points}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("the profile with its speed model does not validate: %w", err)
	}
	return p, nil
}
