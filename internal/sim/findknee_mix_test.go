package sim

import (
	"testing"

	"github.com/kneewatch/kneewatch/knee"
)

func TestOnlyALowerBound(t *testing.T) {
	pts := []knee.Point{{Concurrency: 128, RequestsPerSecond: 40}, {Concurrency: 256, RequestsPerSecond: 60}}
	closed := knee.Profile{Metadata: knee.Metadata{Partial: true}, Points: pts, Knee: knee.Knee{Concurrency: 256}}
	top := knee.Profile{Metadata: knee.Metadata{Partial: true}, Points: pts,
		Knee: knee.Knee{Concurrency: 150, Arrivals: knee.ArrivalsPoisson, RequestsPerSecond: 60, ClosedLoopConcurrency: 256}}
	below := top
	below.Knee.RequestsPerSecond = 51.3
	whole := below
	whole.Metadata.Partial = false
	for _, tt := range []struct {
		name string
		p    knee.Profile
		want bool
	}{{"a partial closed-loop knee", closed, true}, {"a poisson knee at the top of its bracket", top, true},
		{"a poisson knee below it", below, false}, {"a knee not partial", whole, false}} {
		if got := onlyALowerBound(tt.p); got != tt.want {
			t.Errorf("%s: onlyALowerBound = %v, want %v", tt.name, got, tt.want)
		}
	}
}
