package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// ErrOpenLoopSLOUnreachable is returned (with the closed-loop profile) when
// even the lowest Poisson rate tried breaks the SLO.
var ErrOpenLoopSLOUnreachable = errors.New("the SLO breaks under Poisson arrivals even at the lowest rate tried")

// findPoissonKnee moves closed's knee to the one open-loop traffic has.
// Closed-loop clients pace themselves by the replica, so prefills never
// bunch up and the queue never grows; Poisson arrivals do both, and break
// the SLO at a lower rate. knee.RateSearch bisects a steady Poisson rate
// between ol.Low and 1 × the closed-loop knee's request rate: Low must keep
// the SLO, 1 is the knee if it keeps it, else ol.Steps halvings of the
// bracket. Each trial is RunOpenLoop; the knee is the trial at the largest rate that kept the
// SLO, its concurrency the mean in-flight requests there.
func findPoissonKnee(ctx context.Context, cfg KneeConfig, ol OpenLoopConfig, closed knee.Profile, clock func() time.Time) (knee.Profile, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	closedRate, err := closedKneeRate(closed)
	if err != nil {
		return closed, err
	}
	p := closed
	trial := func(frac float64) (OpenLoopLevel, error) {
		rate := math.Round(frac*closedRate*1e6) / 1e6
		lv, err := RunOpenLoop(ctx, OpenLoopLevelConfig{
			Engine: cfg.Engine, Workload: cfg.Workload, Rate: rate, SLO: cfg.SLO, Seed: cfg.Seed, OpenLoop: ol, Verdict: cfg.OpenLoopVerdict,
		})
		if err != nil {
			return lv, fmt.Errorf("poisson rate %g requests/s: %w", rate, err)
		}
		p.Sweep.RateLevels = append(p.Sweep.RateLevels, rate)
		log.Debug("poisson trial", "rate", rate, "share_of_closed_loop_rate", frac, "kept_slo", lv.KeptSLO, "ran_away", lv.RanAway,
			"in_flight", lv.Point.Concurrency, "ttft_p99", lv.Point.TTFT.P99, "tpot_p99", lv.Point.TPOT.P99)
		return lv, nil
	}

	search, err := knee.NewRateSearch(ol.Low, ol.Steps)
	if err != nil {
		return closed, err
	}
	var best OpenLoopLevel
	for {
		frac, ok := search.Next()
		if !ok {
			break
		}
		lv, err := trial(frac)
		if err != nil {
			return closed, err
		}
		search.Record(lv.KeptSLO)
		if lv.KeptSLO {
			best = lv
		}
	}
	if !(search.Best() > 0) {
		// The search ends with Low when nothing above it kept the SLO.
		lowRate := p.Sweep.RateLevels[len(p.Sweep.RateLevels)-1]
		return closed, fmt.Errorf("%w: workload %s at %g requests/s (%g× the closed-loop knee's %g requests/s at concurrency %g); "+
			"lower the open-loop low bound or loosen the SLO", ErrOpenLoopSLOUnreachable, workloadName(closed), lowRate, ol.Low, closedRate, closed.Knee.Concurrency)
	}
	log.Debug("poisson search ended", "why", search.Done())

	at := best.Point
	p.Knee = knee.Knee{
		Concurrency:            onCurve(p, at.Concurrency, log),
		OutputTokensPerSecond:  at.OutputTokensPerSecond,
		GoodputTokensPerSecond: at.GoodputTokensPerSecond,
		KVCacheUsage:           at.KVCacheUsage,
		LimitingResource:       knee.LimitingResource(at),
		Arrivals:               knee.ArrivalsPoisson,
		RequestsPerSecond:      best.Rate,
		ClosedLoopConcurrency:  closed.Knee.Concurrency,
	}
	p.Sweep.FinishedAt = clock().UTC()
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("the poisson knee's profile does not validate: %w", err)
	}
	return p, nil
}

// closedKneeRate is the request rate of the closed-loop knee's point.
func closedKneeRate(p knee.Profile) (float64, error) {
	if pt, ok := knee.PointAt(p.Points, p.Knee.Concurrency); ok && pt.RequestsPerSecond > 0 {
		return pt.RequestsPerSecond, nil
	}
	return 0, fmt.Errorf("the closed-loop knee at concurrency %g has no point with a request rate", p.Knee.Concurrency)
}

// onCurve is the in-flight load, moved into the range of the profile's
// points when it lies outside (kneewatch reads the knee on that curve, and
// the profile must say where on it): below the first point when the knee
// rate is so low that the replica is mostly idle, above the last when the
// closed-loop sweep hit its ceiling and the queue at that rate holds more.
func onCurve(p knee.Profile, inFlight float64, log *slog.Logger) float64 {
	first, last := p.Points[0].Concurrency, p.Points[len(p.Points)-1].Concurrency
	c := min(max(inFlight, first), last)
	if c != inFlight {
		log.Warn("the poisson knee's mean in-flight requests lie outside the closed-loop curve; the knee is put at its nearest end",
			"in_flight", inFlight, "knee_concurrency", c, "curve_from", first, "curve_to", last)
	}
	return c
}

func workloadName(p knee.Profile) string {
	if p.Workload.Source != "" {
		return p.Workload.Source
	}
	return p.Workload.Mix.Name
}
