package detection

import (
	"fmt"
	"time"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/workload"
)

// Deployment is what a scenario's replica serves and is judged by: the
// simulator preset, the request mix its knee profile was swept with, and the
// latency SLO of that profile.
type Deployment struct {
	Preset   string
	Workload string // workload preset of the profile's sweep and of the traffic
	SLO      knee.SLO
	// Tightness, when SLO is zero, has the bench set the SLO from the
	// replica's latency at concurrency 1 (SLOTight or SLOLoose, see
	// deriveSLO): the generated suite's deployments.
	Tightness string
}

// Scenario is one scripted run of a replica in virtual time. Load, AltShare
// and Slowdown are functions of the offset from the start of the run.
type Scenario struct {
	ID          int
	Name        string
	Description string
	Deployment  Deployment
	Duration    time.Duration

	// Load is the open-loop (Poisson) arrival rate as a multiple of the
	// request rate the profile's knee sustains: 1 offers as many requests
	// per second as the replica completes at its knee.
	Load func(t time.Duration) float64
	// AltWorkload and AltShare shift the traffic mix: at offset t a request
	// is drawn from AltWorkload with probability AltShare(t), else from the
	// deployment's workload. Empty AltWorkload: no shift.
	AltWorkload string
	AltShare    func(t time.Duration) float64
	// Slowdown is the GPU's throttling factor (≥ 1) at t; nil means 1.
	Slowdown func(t time.Duration) float64
	// SlowdownMax bounds Slowdown over the run (for the true-knee grid).
	SlowdownMax float64

	// Safe marks a scenario meant to stay under the knee: any page in it is
	// a false page, and the goal is none.
	Safe bool

	// Family, Half and NearKnee are set on generated scenarios (see
	// GenerateSuite): the kind of traffic, the suite half, and whether it
	// is a safe one holding near the knee. Regressions leave them empty.
	Family   string
	Half     string
	NearKnee bool
	// Seed, when set, seeds the scenario's arrivals (offset by the run's
	// seed − 1); else they are seeded by the run's seed + ID.
	Seed uint64
}

// runSeed is the seed of the scenario's arrivals in a run seeded seed.
func (s *Scenario) runSeed(seed uint64) uint64 {
	if s.Seed != 0 {
		return s.Seed + seed - 1
	}
	return seed + uint64(s.ID)
}

// slowdownAt is the scenario's throttling factor at t.
func (s *Scenario) slowdownAt(t time.Duration) float64 {
	if s.Slowdown == nil {
		return 1
	}
	return s.Slowdown(t)
}

// altShareAt is the share of requests drawn from the alternative mix at t.
func (s *Scenario) altShareAt(t time.Duration) float64 {
	if s.AltWorkload == "" || s.AltShare == nil {
		return 0
	}
	return min(max(s.AltShare(t), 0), 1)
}

// maxLoad bounds a scenario's load: twice the knee is far past it on every
// deployment, and an open-loop queue growing that fast only costs time.
const maxLoad = 2

// validate reports the first thing that makes the scenario unrunnable.
func (s *Scenario) validate() error {
	if err := s.validateShape(); err != nil {
		return err
	}
	if s.Deployment.SLO == (knee.SLO{}) {
		return fmt.Errorf("scenario %s: deployment %s/%s has no SLO", s.Name, s.Deployment.Preset, s.Deployment.Workload)
	}
	return nil
}

// validateShape checks everything but the SLO (which a generated
// deployment only gets when it runs): names, schedules within range, known
// workloads and tightness.
func (s *Scenario) validateShape() error {
	switch {
	case s.Name == "":
		return fmt.Errorf("scenario %d: no name", s.ID)
	case s.Duration <= 0:
		return fmt.Errorf("scenario %s: duration must be > 0, got %s", s.Name, s.Duration)
	case s.Load == nil:
		return fmt.Errorf("scenario %s: no load schedule", s.Name)
	case s.Deployment.Preset == "" || s.Deployment.Workload == "":
		return fmt.Errorf("scenario %s: deployment needs a preset and a workload", s.Name)
	case s.AltWorkload != "" && s.AltShare == nil:
		return fmt.Errorf("scenario %s: alternative workload %q without a share schedule", s.Name, s.AltWorkload)
	case s.Slowdown != nil && s.SlowdownMax < 1:
		return fmt.Errorf("scenario %s: a slowdown schedule needs SlowdownMax ≥ 1, got %v", s.Name, s.SlowdownMax)
	case s.Deployment.SLO == (knee.SLO{}) && s.Deployment.Tightness != SLOTight && s.Deployment.Tightness != SLOLoose:
		return fmt.Errorf("scenario %s: deployment %s/%s has no SLO and an unknown SLO tightness %q (known: %s, %s)",
			s.Name, s.Deployment.Preset, s.Deployment.Workload, s.Deployment.Tightness, SLOTight, SLOLoose)
	}
	if _, err := sim.LoadPreset(s.Deployment.Preset); err != nil {
		return fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	for _, w := range []string{s.Deployment.Workload, s.AltWorkload} {
		if _, ok := workload.Preset(w); w != "" && !ok {
			return fmt.Errorf("scenario %s: unknown workload %q (known: %v)", s.Name, w, workload.PresetNames())
		}
	}
	for t := time.Duration(0); t <= s.Duration; t += time.Second {
		if l := s.Load(t); !(l >= 0) || l > maxLoad {
			return fmt.Errorf("scenario %s: load at %s is %v, want 0..%d× the knee", s.Name, t, l, maxLoad)
		}
		if f := s.slowdownAt(t); !(f >= 1) || f > max(s.SlowdownMax, 1) {
			return fmt.Errorf("scenario %s: slowdown at %s is %v, want 1..%v", s.Name, t, f, max(s.SlowdownMax, 1))
		}
		if s.AltShare != nil {
			if v := s.AltShare(t); !(v >= 0 && v <= 1) {
				return fmt.Errorf("scenario %s: mix share at %s is %v, want 0..1", s.Name, t, v)
			}
		}
	}
	return nil
}

// Schedule helpers: each returns a function of the run's offset.

// constant is v at every offset.
func constant(v float64) func(time.Duration) float64 {
	return func(time.Duration) float64 { return v }
}

// ramp holds from until start, moves linearly to to over length, then holds to.
func ramp(from, to float64, start, length time.Duration) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		switch {
		case t <= start:
			return from
		case t >= start+length:
			return to
		}
		return from + (to-from)*float64(t-start)/float64(length)
	}
}
