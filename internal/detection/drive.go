package detection

import (
	"context"
	"fmt"
	"time"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
)

// benchEpoch is virtual time zero of every run. Times are what Prometheus
// stores, so any fixed instant works; a fixed one keeps runs reproducible.
var benchEpoch = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// tickTruth is what the simulator knows at a scrape tick that no metric shows.
type tickTruth struct {
	at     time.Time
	offset time.Duration
	// inflightArea is ∫ in-flight requests dt from the start to at, in
	// request·seconds: the exact load, not a sample of it.
	inflightArea float64
	slowdown     float64
	altShare     float64
}

// runTrace is a run's ground truth: every request's TTFT (stamped at its
// first token) and TPOT (stamped at its end), and the tick-by-tick load.
type runTrace struct {
	ttft, tpot []knee.LatencyEvent
	ticks      []tickTruth
	requests   int // arrived
	steps      int
}

// driveConfig is one virtual-time run of a scenario's replica.
type driveConfig struct {
	scenario *Scenario
	preset   sim.Preset
	kneeRate float64 // requests/s at Load = 1
	seed     uint64
	interval time.Duration // between scrapes
	vllm     *vllmMetrics
	dcgm     *dcgmMetrics
	// scrape is called at every tick, after the metrics are up to date,
	// with the ticks so far (the last one the current).
	scrape func(ticks []tickTruth) error
}

// drive runs the engine in virtual time: requests arrive open-loop, the
// engine steps back to back while it has work (each step's tokens, latencies
// and gauges become visible at the step's end, as on a real replica), and
// at every scrape tick the metrics are handed to cfg.scrape.
func drive(ctx context.Context, cfg driveConfig) (*runTrace, error) {
	sc := cfg.scenario
	eng, err := sim.NewEngine(sim.Config{Preset: cfg.preset, Slowdown: sc.slowdownAt(0)})
	if err != nil {
		return nil, err
	}
	arr, err := newArrivals(sc, cfg.kneeRate, cfg.preset.MaxModelLen, cfg.seed)
	if err != nil {
		return nil, err
	}
	tr := &runTrace{}
	end := benchEpoch.Add(sc.Duration)
	nextTick := benchEpoch.Add(cfg.interval)

	// The queues as the metrics show them (they change at arrivals and at
	// step ends), and the in-flight load's integral over time.
	var (
		running, waiting int
		area             float64
		areaAt           = benchEpoch
		nextID           uint64
	)
	integrate := func(t time.Time) {
		area += float64(running+waiting) * t.Sub(areaAt).Seconds()
		areaAt = t
	}
	arrive := func() error {
		at := benchEpoch.Add(arr.next)
		prompt, output := arr.draw(arr.next)
		nextID++
		if err := eng.Submit(&sim.Request{ID: nextID, PromptTokens: prompt, MaxTokens: output, Arrival: at}); err != nil {
			return fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		integrate(at)
		// The running batch and KV only change at step ends; the queue
		// gauge follows arrivals, as vLLM's does.
		waiting++
		cfg.vllm.waiting.Set(float64(waiting))
		tr.requests++
		arr.advance()
		return nil
	}
	tick := func() error {
		integrate(nextTick)
		off := nextTick.Sub(benchEpoch)
		tr.ticks = append(tr.ticks, tickTruth{at: nextTick, offset: off, inflightArea: area,
			slowdown: sc.slowdownAt(off), altShare: sc.altShareAt(off)})
		cfg.dcgm.sample(nextTick)
		if err := cfg.scrape(tr.ticks); err != nil {
			return err
		}
		nextTick = nextTick.Add(cfg.interval)
		return nil
	}
	// advanceTo handles every arrival and tick before t, in time order.
	advanceTo := func(t time.Time) error {
		for {
			ta := end.Add(time.Hour)
			if !arr.exhausted {
				ta = benchEpoch.Add(arr.next)
			}
			switch {
			case nextTick.Before(t) && !nextTick.After(ta) && !nextTick.After(end):
				if err := tick(); err != nil {
					return err
				}
			case ta.Before(t):
				if err := arrive(); err != nil {
					return err
				}
			default:
				return nil
			}
		}
	}

	now := benchEpoch
	for !now.After(end) {
		if tr.steps%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if eng.Idle() {
			// Jump to the next arrival (or past the end), with every tick on the way.
			next := end.Add(time.Nanosecond)
			if !arr.exhausted {
				next = benchEpoch.Add(arr.next)
			}
			if err := advanceTo(next); err != nil {
				return nil, err
			}
			now = next
			if !arr.exhausted && !benchEpoch.Add(arr.next).After(now) {
				if err := arrive(); err != nil {
					return nil, err
				}
			}
			continue
		}
		if f := sc.slowdownAt(now.Sub(benchEpoch)); f != eng.Slowdown() {
			if err := eng.SetSlowdown(f); err != nil {
				return nil, err
			}
		}
		res := eng.Step(now)
		if res.Duration <= 0 {
			return nil, fmt.Errorf("scenario %s: engine stalled at %s with %d waiting", sc.Name, now.Sub(benchEpoch), eng.State().Waiting)
		}
		tr.steps++
		// Arrivals and ticks during the step see the state before its end.
		if err := advanceTo(res.End); err != nil {
			return nil, err
		}
		now = res.End
		deliver(&res, cfg, tr)
		integrate(now)
		st := eng.State()
		running, waiting = st.Running, st.Waiting
		cfg.vllm.setState(st.Running, st.Waiting, st.KVUsage)
		// Requests that arrived exactly at the step's end join before the next step.
		for !arr.exhausted && !benchEpoch.Add(arr.next).After(now) {
			if err := arrive(); err != nil {
				return nil, err
			}
		}
	}
	// Ticks left after the last step (an idle tail).
	for !nextTick.After(end) {
		if err := tick(); err != nil {
			return nil, err
		}
	}
	return tr, nil
}

// deliver records a finished step: metrics, GPU activity and the ground truth.
func deliver(res *sim.StepResult, cfg driveConfig, tr *runTrace) {
	cfg.vllm.step(res)
	cfg.dcgm.step(res.Start, res.End)
	for _, r := range res.FirstTokens {
		tr.ttft = append(tr.ttft, knee.LatencyEvent{At: res.End, Seconds: r.TTFT().Seconds()})
	}
	for _, r := range res.Finished {
		if tpot, ok := r.TPOT(); ok {
			tr.tpot = append(tr.tpot, knee.LatencyEvent{At: res.End, Seconds: tpot.Seconds()})
		}
	}
}
