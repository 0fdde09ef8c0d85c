package main

import (
	"log/slog"
	"slices"

	"github.com/kneewatch/kneewatch/knee"
)

// warnClosedLoopKnees logs, once per profile, each knee measured with a
// closed loop of clients. Such clients pace themselves by the replica, so
// prefills never bunch and the queue never grows; under open (Poisson)
// traffic the SLO breaks below that knee (the detection bench measured
// 0.6–0.85× its request rate), so headroom reads high and the page comes
// late. The fix is a re-sweep, which the message names.
func warnClosedLoopKnees(logger *slog.Logger, profiles map[string]*knee.Profile) {
	names := make([]string, 0, len(profiles))
	for name := range profiles {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := profiles[name]
		if p == nil || p.Knee.ArrivalsOrDefault() != knee.ArrivalsClosedLoop {
			continue
		}
		logger.Warn("knee profile was measured closed-loop: under open traffic the SLO breaks below this knee, so headroom reads high; "+
			"re-measure it with `kneewatch sweep --arrivals poisson`",
			"profile", name, "knee_concurrency", p.Knee.Concurrency)
	}
}
