package detection

import (
	"math"
	"testing"
	"time"
)

func TestArrivalsFollowTheLoadSchedule(t *testing.T) {
	sc := Scenario{Name: "s", Duration: time.Hour, Deployment: chatDeployment,
		Load: ramp(0.5, 1.5, 30*time.Minute, time.Nanosecond)} // 0.5× for 30 min, then 1.5×
	a, err := newArrivals(&sc, 10, 131072, 7)
	if err != nil {
		t.Fatal(err)
	}
	var first, second int
	for !a.exhausted {
		if a.next <= 30*time.Minute {
			first++
		} else {
			second++
		}
		p, o := a.draw(a.next)
		if p < 1 || o < 1 {
			t.Fatalf("drew %d prompt and %d output tokens", p, o)
		}
		a.advance()
	}
	// Poisson counts: 9000 and 27000 expected, a standard deviation of ~1%.
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"first half", float64(first), 9000}, {"second half", float64(second), 27000}} {
		if math.Abs(c.got-c.want) > 4*math.Sqrt(c.want) {
			t.Errorf("%s: %v arrivals, want %v ± %v", c.name, c.got, c.want, 4*math.Sqrt(c.want))
		}
	}
}

func TestArrivalsDrawTheShiftedMixAtItsShare(t *testing.T) {
	sc := Scenario{Name: "s", Duration: time.Hour, Deployment: chatDeployment, Load: constant(1),
		AltWorkload: "rag", AltShare: constant(0.25)}
	a, err := newArrivals(&sc, 1, 131072, 3)
	if err != nil {
		t.Fatal(err)
	}
	rag := 0
	const n = 20000
	for range n {
		if p, _ := a.draw(0); p >= 1500 { // RAG prompts are 1500–4500 tokens; chat's rarely reach 1500
			rag++
		}
	}
	if share := float64(rag) / n; math.Abs(share-0.25) > 0.02 {
		t.Errorf("share of RAG-sized prompts %.3f, want 0.25 ± 0.02", share)
	}
}

func TestArrivalsCutRequestsToTheModelLength(t *testing.T) {
	sc := Scenario{Name: "s", Duration: time.Minute, Deployment: longContextDeployment, Load: constant(1)}
	a, err := newArrivals(&sc, 1, 9000, 1)
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		if p, o := a.draw(0); p+o > 9000 || o < 1 {
			t.Fatalf("drew %d + %d tokens, over max_model_len 9000", p, o)
		}
	}
}
