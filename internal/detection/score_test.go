package detection

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kneewatch/kneewatch/knee"
)

// at is an instant m minutes into a run.
func at(m float64) time.Time { return benchEpoch.Add(time.Duration(m * float64(time.Minute))) }

func firing(start, end float64) Firing {
	f := Firing{Alert: "A", Start: at(start)}
	if end > 0 {
		f.End = at(end)
	}
	return f
}

func TestScore(t *testing.T) {
	breach := []Episode{{Start: at(30), End: at(40)}}
	type view struct {
		Caught, FiringAtBreach []bool
		Leads                  []time.Duration
		Missed, FalsePages     int
		Quiet                  float64
	}
	tests := []struct {
		name     string
		firings  []Firing
		breaches []Episode
		want     view
	}{
		{
			name:     "a page two minutes before the breach leads it by two minutes",
			firings:  []Firing{firing(28, 45)},
			breaches: breach,
			want:     view{Caught: []bool{true}, FiringAtBreach: []bool{true}, Leads: []time.Duration{2 * time.Minute}, Quiet: 5.0 / 35},
		},
		{
			name:     "a page after the breach began has a negative lead",
			firings:  []Firing{firing(33, 0)},
			breaches: breach,
			// Still firing after the breach ended (40–60): quiet time spent firing.
			want: view{Caught: []bool{true}, FiringAtBreach: []bool{false}, Leads: []time.Duration{-3 * time.Minute}, Quiet: 20.0 / 35},
		},
		{
			name:     "a page long before the breach is false and the breach it still fires through is missed",
			firings:  []Firing{firing(5, 0)},
			breaches: breach,
			// Quiet time is 0–15 and 40–60: the alert fires 5–15 and 40–60.
			want: view{Caught: []bool{false}, FiringAtBreach: []bool{true}, Leads: []time.Duration{0}, Missed: 1, FalsePages: 1, Quiet: 30.0 / 35},
		},
		{
			name:     "no page at all misses the breach",
			breaches: breach,
			want:     view{Caught: []bool{false}, FiringAtBreach: []bool{false}, Leads: []time.Duration{0}, Missed: 1},
		},
		{
			name:    "every page in a run without a breach is false",
			firings: []Firing{firing(10, 12), firing(20, 21)},
			want:    view{FalsePages: 2, Quiet: 3.0 / 60},
		},
		{
			name:     "overlapping instances of one detector are one page",
			firings:  []Firing{firing(27, 35), firing(29, 50)},
			breaches: breach,
			want:     view{Caught: []bool{true}, FiringAtBreach: []bool{true}, Leads: []time.Duration{3 * time.Minute}, Quiet: 10.0 / 35},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := score(Detector{Key: "d"}, tt.firings, tt.breaches, benchEpoch, at(60))
			got := view{s.Caught, s.FiringAtBreach, s.Leads, s.Missed, s.FalsePages, s.QuietFiringShare}
			// The quiet share is sampled every second: boundaries cost ~1/2100.
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-3)); diff != "" {
				t.Errorf("score (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHeadroomErrorClampsBothSidesToZeroOne(t *testing.T) {
	truth := []TruthPoint{{At: at(0), Headroom: 0.9}, {At: at(1), Headroom: 0.5}, {At: at(2), Headroom: -3}, {At: at(3), Headroom: 0.2}}
	inferred := []float64{0.1, 0.45, -1.5, nanValue()}
	got := headroomError(inferred, truth, 1)
	want := HeadroomError{Mean: 0.025, Max: 0.05, MaxAt: at(1), P95: 0.0475, WithinGoal: 1, Samples: 2, Unknown: 1}
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("headroomError (-want +got):\n%s", diff)
	}
}

func TestHeadroomErrorTailAndShareWithinTheGoal(t *testing.T) {
	// Errors 0, 0.01, …, 0.19: eleven of twenty within 0.1.
	var truth []TruthPoint
	var inferred []float64
	for i := range 20 {
		truth = append(truth, TruthPoint{At: at(float64(i)), Headroom: 0.5})
		inferred = append(inferred, 0.5-float64(i)/100)
	}
	got := headroomError(inferred, truth, 0)
	if diff := cmp.Diff([]float64{0.55, 0.1805, 0.19}, []float64{got.WithinGoal, got.P95, got.Max}, approx); diff != "" {
		t.Errorf("share within 0.1, p95, max (-want +got):\n%s", diff)
	}
}

// The direction table splits the errors over the goal by their sign and
// by where they fell: reading 0.95 as 0.7 far from the knee is a safe-side
// error no page is decided on; reading 0.1 as 0.3 is a late page.
func TestErrorDirectionSplitsBySignAndDistanceFromTheKnee(t *testing.T) {
	truth := []TruthPoint{{At: at(0), Headroom: 0.95}, {At: at(1), Headroom: 0.1}, {At: at(2), Headroom: 0.2},
		{At: at(3), Headroom: 0.5}, {At: at(4), Headroom: -2}}
	inferred := []float64{0.7, 0.3, 0.22, nanValue(), -0.5}
	res := &ScenarioResult{HeadroomCompared: comparedHeadrooms(inferred, truth, 0)}
	d := directionOf([]*ScenarioResult{res})
	got := []float64{float64(d.n), float64(d.over), float64(d.overLow), float64(d.overFar), float64(d.near.n), d.near.max, float64(d.nearHigh.n)}
	// Compared: 4 (the unknown skipped); over 0.1: 0.95→0.7 (low, far) and
	// 0.1→0.3 (high, near); near the knee: 0.1, 0.2 and the clamped −2 (0),
	// of which 0.1→0.3 and 0.2→0.22 read high.
	if diff := cmp.Diff([]float64{4, 2, 1, 1, 3, 0.2, 2}, got, approx); diff != "" {
		t.Errorf("scrapes, over, low, far, near scrapes, near max, near high (-want +got):\n%s", diff)
	}
}

// A resweep that found no knee for a deployment leaves its scenarios
// without the what-if; the report says how many and still writes the
// rest, rather than failing on the missing profile.
func TestResweepTablesCountScenariosWithoutAKnee(t *testing.T) {
	dep := func(w string) Deployment {
		return Deployment{Preset: "llama-3.1-8b-h100", Workload: w, Tightness: SLOTight}
	}
	with := &ScenarioResult{Scenario: &Scenario{Family: FamilyPlateauSafe, Deployment: dep("chat")},
		Profile: knee.Profile{Knee: knee.Knee{Concurrency: 100, RequestsPerSecond: 50}}, HeadroomErrors: []float64{0.01, 0.02},
		Resweep: &WhatIfResult{Profile: knee.Profile{Knee: knee.Knee{Concurrency: 120, RequestsPerSecond: 52}}, Errors: []float64{0.2, 0.3}}}
	without := &ScenarioResult{Scenario: &Scenario{Family: FamilyPlateauSafe, Deployment: dep("rag")},
		Profile: knee.Profile{Knee: knee.Knee{Concurrency: 6, RequestsPerSecond: 3}}, HeadroomErrors: []float64{0.05}}
	r := &Report{Options: Options{Seed: 1, ResweepSeed: 2}, Results: []*ScenarioResult{with, without}}
	var b strings.Builder
	r.suiteResweepTables(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) })
	for _, want := range []string{
		"1 of 2 scenarios ran without it",
		"| 8b-h100 chat tight | 100.0 (50) | 120.0 (52) | 1.20 |",
		"| 8b-h100 rag tight | 6.0 (3) | no knee | — |",
		"| plateau-safe | 0.047 | 0.295 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the resweep tables lack %q:\n%s", want, b.String())
		}
	}
}
