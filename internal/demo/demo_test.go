package demo

import (
	"bytes"
	"context"
	"fmt"
	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/watch"
	"math"
	"testing"
	"time"
)

// TestDemoHeadroomMatchesTheGroundTruthWithinAMinute is the watcher's
// acceptance test: four simulated replicas held idle, at half the knee, near
// it and past it, each evaluated against the simulator's true knee.
// Within 60 s every headroom must be within 0.1 of 1 − load ÷ true knee.
// Then one replica's metrics endpoint dies: it alone goes down.
func TestDemoHeadroomMatchesTheGroundTruthWithinAMinute(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a simulated fleet in real time for up to a minute")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	fleet, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	t.Logf("true knee %.0f; replicas held at %v", fleet.Profile.Knee.Concurrency, concurrencies(fleet))

	w := watch.NewWatcher(watch.WatcherOptions{Interval: time.Second, Window: 20 * time.Second, TargetHeadroom: 0.2})
	if err := w.SetTargets(fleet.Targets()); err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.Run(ctx) }()

	deadline := start.Add(60 * time.Second)
	var last *watch.Round
	var problems []string
	for time.Now().Before(deadline) {
		time.Sleep(2 * time.Second)
		last = w.Latest()
		problems = checkHeadroom(fleet, last)
		// The window must be full of steady load before judging: the first
		// 25 s include the ramp.
		if time.Since(start) > 25*time.Second && len(problems) == 0 {
			break
		}
	}
	var table bytes.Buffer
	_ = fleet.WriteTable(&table, last)
	t.Logf("after %.0f s:\n%s", time.Since(start).Seconds(), table.String())
	for _, p := range problems {
		t.Error(p)
	}
	if t.Failed() {
		return
	}

	// The near-knee replica's metrics endpoint dies.
	victim := fleet.Replicas[2]
	down := true
	if _, err := victim.Replica.SetFaults(sim.FaultPatch{MetricsDown: &down}); err != nil {
		t.Fatal(err)
	}
	r := w.EvaluateOnce(ctx)
	for _, e := range r.Replicas {
		switch {
		case e.Replica == victim.Name:
			if e.EngineUp || e.Result.OK || e.Result.Reason != watch.ReasonEngineDown || known(e.Result.Headroom) {
				t.Errorf("%s with its metrics down: engine up %v, ok %v, reason %q, headroom %v; want down, not ok, %q, no headroom",
					e.Replica, e.EngineUp, e.Result.OK, e.Result.Reason, e.Result.Headroom, watch.ReasonEngineDown)
			}
		case !e.EngineUp || !e.Result.OK:
			t.Errorf("%s was affected by another replica's failure: engine up %v, ok %v (%s)", e.Replica, e.EngineUp, e.Result.OK, e.Result.Reason)
		}
	}
}

// known reports whether a value is present (not NaN).
func known(v float64) bool { return !math.IsNaN(v) }

func concurrencies(f *Fleet) []int {
	var out []int
	for _, r := range f.Replicas {
		out = append(out, r.Concurrency)
	}
	return out
}

// checkHeadroom lists every way the round misses the acceptance criteria.
func checkHeadroom(f *Fleet, r *watch.Round) []string {
	if r == nil {
		return []string{"no evaluation yet"}
	}
	byName := map[string]watch.ReplicaEval{}
	for _, e := range r.Replicas {
		byName[e.Replica] = e
	}
	var problems []string
	var headrooms []float64
	for _, rep := range f.Replicas {
		e, ok := byName[rep.Name]
		if !ok || !e.Result.OK {
			problems = append(problems, rep.Name+": not evaluated")
			continue
		}
		h := e.Result.Headroom
		if math.Abs(h-rep.TrueHeadroom) > 0.1 {
			problems = append(problems, fmt.Sprintf("%s (%s): headroom %.3f, truth %.3f (dimension %s)", rep.Name, rep.Load.Name, h, rep.TrueHeadroom, e.Result.Dimension))
		}
		switch rep.Load.Name {
		case "idle":
			if h <= 0.8 {
				problems = append(problems, fmt.Sprintf("idle replica headroom %.3f, want > 0.8", h))
			}
		case "past":
			if h >= 0 {
				problems = append(problems, fmt.Sprintf("past-knee replica headroom %.3f, want < 0", h))
			}
		}
		headrooms = append(headrooms, h)
	}
	// The loads rise replica by replica, so headroom must fall: the half and
	// near replicas lie between the idle and the past-knee one.
	for i := 1; i < len(headrooms); i++ {
		if headrooms[i] >= headrooms[i-1] {
			problems = append(problems, fmt.Sprintf("headrooms %v do not fall as the load rises", headrooms))
			break
		}
	}
	return problems
}
