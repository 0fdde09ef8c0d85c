package detection

import (
	"fmt"
	"math"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// Deployment is what a scenario's replica serves and is judged by: the
// simulator preset, the request mix its knee profile was swept with, and the
// latency SLO of that profile.
type Deployment struct {
	Preset   string
	Workload string // workload preset of the profile's sweep and of the traffic
	SLO      knee.SLO
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

// validate reports the first thing that makes the scenario unrunnable.
func (s *Scenario) validate() error {
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
	}
	for t := time.Duration(0); t <= s.Duration; t += time.Second {
		if l := s.Load(t); !(l >= 0) || math.IsInf(l, 0) {
			return fmt.Errorf("scenario %s: load at %s is %v, want a finite value ≥ 0", s.Name, t, l)
		}
		if f := s.slowdownAt(t); !(f >= 1) || f > max(s.SlowdownMax, 1) {
			return fmt.Errorf("scenario %s: slowdown at %s is %v, want 1..%v", s.Name, t, f, max(s.SlowdownMax, 1))
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
