package knee

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReplicasNeeded(t *testing.T) {
	tests := []struct {
		name             string
		kneeLoad, target float64
		want             float64
		wantOK           bool
	}{
		{"with no headroom reserved, replicas needed is the knee load", 5, 0, 5, true},
		{"reserving 20% headroom needs a quarter more replicas", 5, 0.2, 6.25, true},
		{"no load needs no replicas", 0, 0.2, 0, true},
		{"a target headroom of 1 leaves no usable capacity", 5, 1, math.NaN(), false},
		{"a negative target headroom is refused", 5, -0.1, math.NaN(), false},
		{"unknown load gives an unknown answer", math.NaN(), 0.2, math.NaN(), false},
		{"negative load is not load", -5, 0.2, math.NaN(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ReplicasNeeded(tt.kneeLoad, tt.target)
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("replicas needed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFleetSizingAgreesWithHeadroom is the promise the on-call reads: a
// fleet whose every replica keeps more than the target headroom is never
// short of replicas, and one whose every replica keeps less always is.
func TestFleetSizingAgreesWithHeadroom(t *testing.T) {
	p := concaveProfile() // the simulator's measured curve, knee at 98 in flight
	at := func(headroom float64) Result {
		load := (1 - headroom) * p.Knee.Concurrency
		out, ok := p.CurveAt(load)
		if !ok {
			t.Fatalf("no curve at %v", load)
		}
		return Evaluate(observe(load, output(out.OutputTokensPerSecond)), p, Options{})
	}
	fleet := func(n int, headroom float64) []Result {
		var rs []Result
		for range n {
			rs = append(rs, at(headroom))
		}
		return rs
	}
	const target = 0.2
	tests := []struct {
		name     string
		results  []Result
		headroom float64 // of each replica, checked
		short    bool
	}{
		{"one replica at 0.3 headroom is not short", fleet(1, 0.3), 0.3, false},
		{"three replicas at 0.3 headroom are not short", fleet(3, 0.3), 0.3, false},
		{"ten replicas at 0.3 headroom are not short", fleet(10, 0.3), 0.3, false},
		{"a replica just above the target headroom is not short", fleet(4, 0.21), 0.21, false},
		{"replicas at 0.1 headroom are short", fleet(3, 0.1), 0.1, true},
		{"replicas past their knee are short", fleet(2, -0.2), -0.2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range tt.results {
				if !r.OK || math.Abs(r.Headroom-tt.headroom) > 1e-9 {
					t.Fatalf("replica headroom %v (ok %v), want %v", r.Headroom, r.OK, tt.headroom)
				}
			}
			f := SummarizeFleet(tt.results, target)
			n := float64(len(tt.results))
			if short := f.ReplicasNeeded > n; short != tt.short {
				t.Errorf("%d replicas at headroom %v: needed %.3f, short = %v, want %v", len(tt.results), tt.headroom, f.ReplicasNeeded, short, tt.short)
			}
			want := n * (1 - tt.headroom) / (1 - target)
			if math.Abs(f.ReplicasNeeded-want) > 1e-9 {
				t.Errorf("needed %v, want %v", f.ReplicasNeeded, want)
			}
			// What sizing by tokens/s over knee goodput used to say, for the record.
			old := f.OfferedTokensPerSecond / (p.Knee.GoodputTokensPerSecond * (1 - target))
			t.Logf("%d replicas at headroom %.2f: needed %.3f (by tokens/s over knee goodput: %.3f)", len(tt.results), tt.headroom, f.ReplicasNeeded, old)
		})
	}
}

func TestSummarizeFleet(t *testing.T) {
	p := computeProfile() // knee 100 in flight, 9,800 goodput tokens/s
	half := Evaluate(observe(50, output(5000)), p, Options{})
	full := Evaluate(observe(100, output(10000)), p, Options{})
	blind := Evaluate(observe(math.NaN()), p, Options{})
	noOutput := Evaluate(observe(20), p, Options{})
	// Broken gauges: each replica's numbers are finite, their sums are not.
	huge := Evaluate(observe(math.MaxFloat64/2, output(math.MaxFloat64)), p, Options{})
	hugeKneeLoad := (1 - huge.Headroom) + (1 - huge.Headroom) + (1 - huge.Headroom)
	nan := math.NaN()
	tests := []struct {
		name    string
		results []Result
		want    Fleet
	}{
		{
			name:    "fleet headroom is one minus total load over total knee concurrency, skipping replicas not evaluated",
			results: []Result{half, full, blind},
			want: Fleet{Replicas: 3, Available: 2, OfferedTokensPerSecond: 15000, KneeLoad: 1.5,
				ReplicasNeeded: 1.5 / 0.8, Headroom: 0.25},
		},
		{
			name:    "an available replica with unknown output leaves the offered tokens/s unknown, not the sizing",
			results: []Result{half, noOutput},
			want:    Fleet{Replicas: 2, Available: 2, OfferedTokensPerSecond: nan, KneeLoad: 0.7, ReplicasNeeded: 0.7 / 0.8, Headroom: 0.65},
		},
		{
			name:    "sums that overflow are unknown, not infinite",
			results: []Result{huge, huge, huge},
			want: Fleet{Replicas: 3, Available: 3, OfferedTokensPerSecond: nan, KneeLoad: hugeKneeLoad,
				ReplicasNeeded: hugeKneeLoad / 0.8, Headroom: nan},
		},
		{
			name:    "a fleet with nothing evaluated knows only its size",
			results: []Result{blind},
			want:    Fleet{Replicas: 1, Available: 0, OfferedTokensPerSecond: nan, KneeLoad: nan, ReplicasNeeded: nan, Headroom: nan},
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
		"llama-8b":  {Replicas: 1, Available: 1, OfferedTokensPerSecond: 5000, KneeLoad: 0.5, ReplicasNeeded: 0.5, Headroom: 0.5},
		"llama-70b": {Replicas: 2, Available: 2, OfferedTokensPerSecond: 15500, KneeLoad: 2, ReplicasNeeded: 2, Headroom: 0},
	}
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("fleet summary (-want +got):\n%s", diff)
	}
}
