package detection

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/kneewatch/kneewatch/workload"
)

// arrivals is the scenario's open-loop arrival process: a Poisson process
// whose rate follows the scenario's load schedule (drawn by thinning a
// process at the schedule's peak rate), each request's lengths drawn from
// the mix in force when it arrives.
//
// Open loop, not closed loop, because detection is about what users send:
// real traffic keeps arriving whether or not the replica keeps up, so past
// the knee the queue grows and TTFT climbs, which is how a breach happens
// in production. A closed loop would throttle itself at the knee (clients
// wait for their answers) and hide exactly that.
type arrivals struct {
	sc        *Scenario
	kneeRate  float64 // requests/s at Load = 1
	peak      float64 // the thinning bound, requests/s
	rng       *rand.Rand
	primary   workload.Mix
	alt       workload.Mix
	maxLen    int
	next      time.Duration // offset of the next accepted arrival
	exhausted bool
}

func newArrivals(sc *Scenario, kneeRate float64, maxLen int, seed uint64) (*arrivals, error) {
	if !(kneeRate > 0) || math.IsInf(kneeRate, 0) {
		return nil, fmt.Errorf("scenario %s: the knee's request rate must be > 0, got %v", sc.Name, kneeRate)
	}
	primary, ok := workload.Preset(sc.Deployment.Workload)
	if !ok {
		return nil, fmt.Errorf("scenario %s: unknown workload %q (known: %v)", sc.Name, sc.Deployment.Workload, workload.PresetNames())
	}
	a := &arrivals{sc: sc, kneeRate: kneeRate, primary: primary, maxLen: maxLen,
		rng: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))}
	if sc.AltWorkload != "" {
		if a.alt, ok = workload.Preset(sc.AltWorkload); !ok {
			return nil, fmt.Errorf("scenario %s: unknown workload %q (known: %v)", sc.Name, sc.AltWorkload, workload.PresetNames())
		}
	}
	var peak float64
	for t := time.Duration(0); t <= sc.Duration; t += 100 * time.Millisecond {
		peak = max(peak, sc.Load(t))
	}
	a.peak = peak * kneeRate * 1.01 // a margin for the schedule between the probes
	a.advance()
	return a, nil
}

// advance moves next to the following accepted arrival, or marks the
// process exhausted past the scenario's end.
func (a *arrivals) advance() {
	if a.peak <= 0 {
		a.exhausted = true
		return
	}
	for {
		a.next += time.Duration(a.rng.ExpFloat64() / a.peak * float64(time.Second))
		if a.next > a.sc.Duration {
			a.exhausted = true
			return
		}
		if a.rng.Float64()*a.peak < a.sc.Load(a.next)*a.kneeRate {
			return
		}
	}
}

// draw returns the lengths of a request arriving at offset t, cut to fit
// max_model_len the way a client that respects it would (output first).
func (a *arrivals) draw(t time.Duration) (prompt, output int) {
	mix := a.primary
	if share := a.sc.altShareAt(t); share > 0 && a.rng.Float64() < share {
		mix = a.alt
	}
	prompt, output = mix.Prompt.Sample(a.rng), max(mix.Output.Sample(a.rng), 1)
	if prompt+output > a.maxLen {
		prompt = min(prompt, a.maxLen-1)
		output = a.maxLen - prompt
	}
	return prompt, output
}
