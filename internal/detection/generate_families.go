package detection

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Suite families. Loads are multiples of the request rate the deployment's
// true knee sustains under nominal conditions, so "0.8" is 0.8× the knee
// whatever the preset's calibration puts it at.
const (
	FamilyRampSlow      = "ramp-slow"
	FamilyRampFast      = "ramp-fast"
	FamilyStepOver      = "step-over"
	FamilySquareBreach  = "square-breach"
	FamilyFlashCrowd    = "flash-crowd"
	FamilyMixRamp       = "mix-ramp"
	FamilyMixStep       = "mix-step"
	FamilyThrottleRamp  = "throttle-ramp"
	FamilyThrottleStep  = "throttle-step"
	FamilyDiurnalBreach = "diurnal-breach"
	FamilyPlateauSafe   = "plateau-safe"
	FamilySquareSafe    = "square-safe"
	FamilyDiurnalSafe   = "diurnal-safe"
)

// genCalm is how long a generated scenario that goes past the knee runs
// quietly first. Shorter than the regressions' 20 min to fit the suite in
// its time budget; still long enough for kneewatch's window and the rules'
// 5-minute lookbacks to fill before anything happens.
const genCalm = 10 * time.Minute

// family is one kind of traffic the generator draws. build draws the
// family's parameters through p (which records them for the scenario's
// key) and returns the scenario without ID, name, half or seed.
type family struct {
	name string
	// weight is the family's share of each half (see familyQuotas).
	weight int
	// safe families stay under the knee; nearKnee ones hold close to it.
	safe, nearKnee bool
	// mix families shift the traffic toward another workload.
	mix   bool
	build func(p *params, dep Deployment, alt string) Scenario
}

// suiteFamilies lists the families in report order. The safe ones that hold
// near the knee weigh 39 of 104, so a half of 120 holds at least 42 of them.
var suiteFamilies = []family{
	{name: FamilyRampSlow, weight: 8, build: func(p *params, dep Deployment, _ string) Scenario {
		base, peak, length := p.level("base", 0.2, 0.4), p.level("peak", 1.2, 1.5), p.minutes("ramp", 20, 35)
		return Scenario{Deployment: dep, Duration: genCalm + length + 5*time.Minute,
			Description: fmt.Sprintf("%.2f× for %s, ramping to %.2f× over %s, held 5 min", base, human(genCalm), peak, human(length)),
			Load:        ramp(base, peak, genCalm, length)}
	}},
	{name: FamilyRampFast, weight: 6, build: func(p *params, dep Deployment, _ string) Scenario {
		base, peak, length := p.level("base", 0.2, 0.4), p.level("peak", 1.2, 1.6), p.minutes("ramp", 3, 8)
		return Scenario{Deployment: dep, Duration: genCalm + length + 10*time.Minute,
			Description: fmt.Sprintf("%.2f× for %s, ramping to %.2f× over %s, held 10 min", base, human(genCalm), peak, human(length)),
			Load:        ramp(base, peak, genCalm, length)}
	}},
	{name: FamilyStepOver, weight: 6, build: func(p *params, dep Deployment, _ string) Scenario {
		base, level, hold := p.level("base", 0.3, 0.5), p.level("level", 1.05, 1.4), p.minutes("hold", 10, 15)
		return Scenario{Deployment: dep, Duration: genCalm + hold,
			Description: fmt.Sprintf("%.2f× for %s, a step to a plateau at %.2f× held %s", base, human(genCalm), level, human(hold)),
			Load:        step(base, level, genCalm)}
	}},
	{name: FamilySquareBreach, weight: 6, build: func(p *params, dep Deployment, _ string) Scenario {
		low, high, period := p.level("low", 0.3, 0.5), p.level("high", 1.1, 1.4), p.minutes("period", 8, 16)
		return Scenario{Deployment: dep, Duration: genCalm + 5*period/2,
			Description: fmt.Sprintf("%.2f× for %s, then a square wave %.2f× ↔ %.2f× with a period of %s", low, human(genCalm), high, low, human(period)),
			Load:        square(low, high, genCalm, period)}
	}},
	{name: FamilyFlashCrowd, weight: 6, build: func(p *params, dep Deployment, _ string) Scenario {
		base, level := p.level("base", 0.3, 0.5), p.level("level", 1.2, 1.6)
		return Scenario{Deployment: dep, Duration: genCalm + 10*time.Minute,
			Description: fmt.Sprintf("a flash crowd: %.2f× for %s, then %.2f× in one step, held 10 min", base, human(genCalm), level),
			Load:        step(base, level, genCalm)}
	}},
	{name: FamilyMixRamp, weight: 8, mix: true, build: func(p *params, dep Deployment, alt string) Scenario {
		load, share, length := p.level("load", 0.45, 0.8), p.pick("share", 0.3, 0.5, 1), p.minutes("ramp", 15, 30)
		return Scenario{Deployment: dep, Duration: genCalm + length + 5*time.Minute,
			Description: fmt.Sprintf("a constant %.2f× request rate whose mix shifts to %.0f%% %s over %s from minute %d, held 5 min",
				load, 100*share, alt, human(length), int(genCalm.Minutes())),
			Load: constant(load), AltWorkload: alt, AltShare: ramp(0, share, genCalm, length)}
	}},
	{name: FamilyMixStep, weight: 8, mix: true, build: func(p *params, dep Deployment, alt string) Scenario {
		load, share := p.level("load", 0.45, 0.8), p.pick("share", 0.2, 0.3, 0.5)
		return Scenario{Deployment: dep, Duration: genCalm + 15*time.Minute,
			Description: fmt.Sprintf("a constant %.2f× request rate; at minute %d, %.0f%% of it becomes %s traffic in one step, held 15 min",
				load, int(genCalm.Minutes()), 100*share, alt),
			Load: constant(load), AltWorkload: alt, AltShare: step(0, share, genCalm)}
	}},
	{name: FamilyThrottleRamp, weight: 6, build: func(p *params, dep Deployment, _ string) Scenario {
		load, f, length := p.level("load", 0.5, 0.8), p.pick("slowdown", 1.4, 1.6, 1.8, 2, 2.2), p.minutes("ramp", 10, 25)
		return Scenario{Deployment: dep, Duration: genCalm + length + 5*time.Minute,
			Description: fmt.Sprintf("a constant %.2f× while the GPU slows down from 1× to %.1f× over %s, held 5 min", load, f, human(length)),
			Load:        constant(load), Slowdown: ramp(1, f, genCalm, length), SlowdownMax: f}
	}},
	{name: FamilyThrottleStep, weight: 6, build: func(p *params, dep Deployment, _ string) Scenario {
		load, f := p.level("load", 0.5, 0.8), p.pick("slowdown", 1.4, 1.6, 1.8, 2, 2.2)
		return Scenario{Deployment: dep, Duration: genCalm + 15*time.Minute,
			Description: fmt.Sprintf("a constant %.2f×; at minute %d the GPU throttles to %.1f× slower in one step, held 15 min", load, int(genCalm.Minutes()), f),
			Load:        constant(load), Slowdown: step(1, f, genCalm), SlowdownMax: f}
	}},
	{name: FamilyDiurnalBreach, weight: 5, build: func(p *params, dep Deployment, _ string) Scenario {
		low, peak, length := p.level("low", 0.1, 0.25), p.level("peak", 1.15, 1.4), p.minutes("day", 60, 80)
		return Scenario{Deployment: dep, Duration: length,
			Description: fmt.Sprintf("a day compressed into %s: %.2f× at night, a peak of %.2f× half way", human(length), low, peak),
			Load:        diurnal(low, peak, length)}
	}},
	{name: FamilyPlateauSafe, weight: 15, safe: true, nearKnee: true, build: func(p *params, dep Deployment, _ string) Scenario {
		base, level, hold := p.level("base", 0.15, 0.3), p.level("level", 0.5, 0.95), p.minutes("hold", 30, 40)
		return Scenario{Deployment: dep, Duration: 5*time.Minute + hold,
			Description: fmt.Sprintf("%.2f× for 5 min, a step up to a plateau at %.2f× held %s", base, level, human(hold)),
			Load:        step(base, level, 5*time.Minute)}
	}},
	{name: FamilySquareSafe, weight: 12, safe: true, nearKnee: true, build: func(p *params, dep Deployment, _ string) Scenario {
		low, high, period := p.level("low", 0.2, 0.4), p.level("high", 0.6, 0.9), p.minutes("period", 6, 12)
		return Scenario{Deployment: dep, Duration: 5*time.Minute + 4*period,
			Description: fmt.Sprintf("%.2f× for 5 min, then a square wave %.2f× ↔ %.2f× with a period of %s", low, high, low, human(period)),
			Load:        square(low, high, 5*time.Minute, period)}
	}},
	{name: FamilyDiurnalSafe, weight: 12, safe: true, nearKnee: true, build: func(p *params, dep Deployment, _ string) Scenario {
		low, peak, length := p.level("low", 0.1, 0.2), p.level("peak", 0.5, 0.9), p.minutes("day", 60, 80)
		return Scenario{Deployment: dep, Duration: length,
			Description: fmt.Sprintf("a day compressed into %s: %.2f× at night, a peak of %.2f× half way", human(length), low, peak),
			Load:        diurnal(low, peak, length)}
	}},
}

// familyByName finds a family.
func familyByName(name string) (family, bool) {
	for _, f := range suiteFamilies {
		if f.name == name {
			return f, true
		}
	}
	return family{}, false
}

// drawer draws candidates: a deployment, for mix families the workload the
// mix shifts toward (in turn, so every workload preset is a target), and the
// family's parameters.
type drawer struct {
	rng       *rand.Rand
	deps      []Deployment
	workloads []string
	mixTurn   int
}

// draw builds one candidate of f and returns it with its parameter key.
func (d *drawer) draw(f family) (Scenario, string) {
	p := &params{rng: d.rng}
	alt := ""
	deps := d.deps
	if f.mix {
		alt = d.workloads[d.mixTurn%len(d.workloads)]
		d.mixTurn++
		// The target must be a mix the preset serves (see suiteDeployments).
		serves := map[string]bool{}
		for _, dep := range d.deps {
			if dep.Workload == alt {
				serves[dep.Preset] = true
			}
		}
		deps = nil
		for _, dep := range d.deps {
			if dep.Workload != alt && serves[dep.Preset] {
				deps = append(deps, dep)
			}
		}
	}
	dep := deps[d.rng.IntN(len(deps))]
	sc := f.build(p, dep, alt)
	sc.Family, sc.Safe, sc.NearKnee = f.name, f.safe, f.nearKnee
	key := strings.Join(append([]string{f.name, dep.Preset, dep.Workload, dep.Tightness, alt}, p.drawn...), "|")
	return sc, key
}

// params draws a scenario's parameters, quantized (levels to 0.01, times to
// 30 s) so that equal keys mean equal scenarios, and records them.
type params struct {
	rng   *rand.Rand
	drawn []string
}

func (p *params) level(name string, lo, hi float64) float64 {
	v := math.Round((lo+(hi-lo)*p.rng.Float64())*100) / 100
	p.drawn = append(p.drawn, name+"="+strconv.FormatFloat(v, 'f', 2, 64))
	return v
}

func (p *params) minutes(name string, lo, hi float64) time.Duration {
	halves := math.Round(2 * (lo + (hi-lo)*p.rng.Float64()))
	d := time.Duration(halves) * 30 * time.Second
	p.drawn = append(p.drawn, name+"="+d.String())
	return d
}

// pick draws one of a few values: the true knee's grid under a mix share or
// a slowdown is measured per value, so a small set lets scenarios share it.
func (p *params) pick(name string, vs ...float64) float64 {
	v := vs[p.rng.IntN(len(vs))]
	p.drawn = append(p.drawn, name+"="+strconv.FormatFloat(v, 'g', -1, 64))
	return v
}

// step holds from until at, then to.
func step(from, to float64, at time.Duration) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		if t < at {
			return from
		}
		return to
	}
}

// square holds low until start, then alternates high and low for half a
// period each, high first.
func square(low, high float64, start, period time.Duration) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		if t < start || (t-start)%period >= period/2 {
			return low
		}
		return high
	}
}
