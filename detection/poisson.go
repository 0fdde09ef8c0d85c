package detection

import (
	"context"
	"fmt"
	"time"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/sim"
)

// Poisson knee search: each trial runs a steady load for poissonWarmup,
// then must keep the SLO at every scrape of poissonSteady; the load is
// bisected between poissonLow and 1 × the closed-loop knee's rate to
// poissonSteps halvings.
const (
	poissonWarmup = 5 * time.Minute
	poissonSteady = 20 * time.Minute
	poissonLow    = 0.2
	poissonSteps  = 6
)

// profile is the true knee profile of dep's replica when a share of its
// traffic comes from alt and its GPU is slowed down by slowdown: the knee
// measured the way its traffic arrives, with steady Poisson arrivals. It is
// the largest load that kept every windowed SLO percentile within its
// threshold over a long steady run, and its concurrency the mean in-flight
// requests at that load. sim.FindKnee measures with a fixed number of
// clients, each sending when its previous request ends (as vllm bench's
// --max-concurrency does); those clients pace themselves by the replica,
// so prefills never bunch up and the queue never grows, and the SLO breaks
// under open traffic well before that knee. The curve (points) stays the
// closed-loop one, which kneewatch reads throughput on.
func (k *kneeFinder) profile(ctx context.Context, dep Deployment, alt string, share, slowdown float64) (knee.Profile, error) {
	key := k.key(dep, alt, share, slowdown)
	alt, share = key.alt, key.share
	if p, ok := k.poisson[key]; ok {
		return p, nil
	}
	closed, err := k.closedLoop(ctx, dep, alt, share, slowdown)
	if err != nil {
		return knee.Profile{}, err
	}
	closedRate, err := closedKneeRate(&closed)
	if err != nil {
		return knee.Profile{}, err
	}
	preset, err := sim.LoadPreset(dep.Preset)
	if err != nil {
		return knee.Profile{}, err
	}
	o := k.opts
	var tried []float64
	trial := func(load float64) (kept bool, inFlight float64, err error) {
		tried = append(tried, load*closedRate)
		sc := &Scenario{Name: fmt.Sprintf("Poisson knee of %s at %.3f×", dep.Workload, load), Deployment: dep,
			Duration: poissonWarmup + poissonSteady, Load: constant(load)}
		if alt != "" {
			sc.AltWorkload, sc.AltShare = alt, constant(share)
		}
		if slowdown != 1 {
			sc.Slowdown, sc.SlowdownMax = constant(slowdown), slowdown
		}
		tr, err := drive(ctx, driveConfig{scenario: sc, preset: preset, kneeRate: closedRate, seed: o.Seed, interval: o.ScrapeInterval,
			vllm: newVLLMMetrics(preset), dcgm: newDCGMMetrics(preset, replicaName), scrape: func(time.Time) error { return nil }})
		if err != nil {
			return false, 0, err
		}
		warm := int(poissonWarmup / o.ScrapeInterval)
		from, to := tr.ticks[warm].at, tr.ticks[len(tr.ticks)-1].at
		if !knee.KeptSLO(tr.ttft, tr.tpot, dep.SLO, o.SLOWindow, from, to, o.ScrapeInterval) {
			return false, 0, nil
		}
		area := tr.ticks[len(tr.ticks)-1].inflightArea - tr.ticks[warm-1].inflightArea
		return true, area / poissonSteady.Seconds(), nil
	}
	lo, hi := poissonLow, 1.0
	kept, inFlight, err := trial(lo)
	if err != nil {
		return knee.Profile{}, err
	}
	if !kept {
		return knee.Profile{}, fmt.Errorf("the SLO of %s breaks under Poisson traffic even at %.1f× the closed-loop knee's rate", dep.Workload, lo)
	}
	best, bestInFlight := lo, inFlight
	if kept, inFlight, err = trial(hi); err != nil {
		return knee.Profile{}, err
	} else if kept {
		best, bestInFlight, lo = hi, inFlight, hi
	}
	for i := 0; i < poissonSteps && lo < hi; i++ {
		mid := (lo + hi) / 2
		kept, inFlight, err := trial(mid)
		if err != nil {
			return knee.Profile{}, err
		}
		if kept {
			lo, best, bestInFlight = mid, mid, inFlight
		} else {
			hi = mid
		}
	}
	p, err := withPoissonKnee(closed, best*closedRate, bestInFlight, tried)
	if err != nil {
		return knee.Profile{}, err
	}
	k.poisson[key] = p
	return p, nil
}

// withPoissonKnee is closed with its knee moved to the Poisson one: the
// same measured curve, read at the Poisson knee's in-flight load.
func withPoissonKnee(closed knee.Profile, rate, inFlight float64, tried []float64) (knee.Profile, error) {
	at, found := closed.CurveAt(inFlight)
	if !found || !(inFlight > 0) {
		return knee.Profile{}, fmt.Errorf("profile %s has no curve at %.1f in flight", closed.Metadata.Name, inFlight)
	}
	p := closed
	p.Points = append([]knee.Point(nil), closed.Points...)
	p.Sweep.RateLevels = tried
	p.Knee = knee.Knee{
		Concurrency:            inFlight,
		OutputTokensPerSecond:  at.OutputTokensPerSecond,
		GoodputTokensPerSecond: at.GoodputTokensPerSecond,
		KVCacheUsage:           at.KVCacheUsage,
		LimitingResource:       closed.Knee.LimitingResource,
		Arrivals:               knee.ArrivalsPoisson,
		RequestsPerSecond:      rate,
		ClosedLoopConcurrency:  closed.Knee.Concurrency,
	}
	return p, p.Validate()
}

// closedKneeRate is the request rate of a closed-loop profile's knee point.
func closedKneeRate(p *knee.Profile) (float64, error) {
	for _, pt := range p.Points {
		if pt.Concurrency == p.Knee.Concurrency {
			if pt.RequestsPerSecond > 0 {
				return pt.RequestsPerSecond, nil
			}
			break
		}
	}
	return 0, fmt.Errorf("profile %s has no request rate at its knee (concurrency %v)", p.Metadata.Name, p.Knee.Concurrency)
}
