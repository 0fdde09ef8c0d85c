package knee

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReplicasNeeded(t *testing.T) {
	tests := []struct {
		name                  string
		offered, knee, target float64
		want                  float64
		wantOK                bool
	}{
		{"with no headroom reserved, replicas needed is offered over knee goodput", 10000, 2000, 0, 5, true},
		{"reserving 20% headroom needs a quarter more replicas", 10000, 2000, 0.2, 6.25, true},
		{"no demand needs no replicas", 0, 2000, 0.2, 0, true},
		{"a target headroom of 1 leaves no usable capacity", 10000, 2000, 1, math.NaN(), false},
		{"a negative target headroom is refused", 10000, 2000, -0.1, math.NaN(), false},
		{"a knee without goodput cannot size a fleet", 10000, 0, 0.2, math.NaN(), false},
		{"unknown demand gives an unknown answer", math.NaN(), 2000, 0.2, math.NaN(), false},
		{"negative demand is not demand", -5, 2000, 0.2, math.NaN(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ReplicasNeeded(tt.offered, tt.knee, tt.target)
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("replicas needed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSummarizeFleet(t *testing.T) {
	p := computeProfile() // knee 100 in flight, 9,800 goodput tokens/s
	half := Evaluate(observe(50, output(5000)), p, Options{})
	full := Evaluate(observe(100, output(10000)), p, Options{})
	blind := Evaluate(observe(math.NaN()), p, Options{})
	noOutput := Evaluate(observe(20), p, Options{})
	nan := math.NaN()
	tests := []struct {
		name    string
		results []Result
		want    Fleet
	}{
		{
			name:    "fleet headroom is one minus total load over total knee concurrency, skipping replicas not evaluated",
			results: []Result{half, full, blind},
			want: Fleet{Replicas: 3, Available: 2, OfferedTokensPerSecond: 15000, KneeGoodputPerReplica: 9800,
				ReplicasNeeded: 15000 / (9800 * 0.8), Headroom: 0.25},
		},
		{
			name:    "an available replica with unknown output leaves replicas needed unknown but headroom known",
			results: []Result{half, noOutput},
			want:    Fleet{Replicas: 2, Available: 2, OfferedTokensPerSecond: nan, KneeGoodputPerReplica: 9800, ReplicasNeeded: nan, Headroom: 0.65},
		},
		{
			name:    "a fleet with nothing evaluated knows only its size",
			results: []Result{blind},
			want:    Fleet{Replicas: 1, Available: 0, OfferedTokensPerSecond: nan, KneeGoodputPerReplica: nan, ReplicasNeeded: nan, Headroom: nan},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, SummarizeFleet(tt.results, 0.2), approx); diff != "" {
				t.Errorf("fleet (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFleetSummaryIsPerModel(t *testing.T) {
	p := computeProfile()
	got := FleetSummary(map[string][]Result{
		"llama-8b":  {Evaluate(observe(50, output(5000)), p, Options{})},
		"llama-70b": {Evaluate(observe(150, output(10500)), p, Options{}), Evaluate(observe(50, output(5000)), p, Options{})},
	}, 0)
	want := map[string]Fleet{
		"llama-8b":  {Replicas: 1, Available: 1, OfferedTokensPerSecond: 5000, KneeGoodputPerReplica: 9800, ReplicasNeeded: 5000.0 / 9800, Headroom: 0.5},
		"llama-70b": {Replicas: 2, Available: 2, OfferedTokensPerSecond: 15500, KneeGoodputPerReplica: 9800, ReplicasNeeded: 15500.0 / 9800, Headroom: 0},
	}
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("fleet summary (-want +got):\n%s", diff)
	}
}
