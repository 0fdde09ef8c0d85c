package collector

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// TestWindowReadsNoWrongNumberFromAnySeries runs series of scrapes an
// upstream could serve over time through the window, Observe and the
// evaluation: each engine's fixture, its counters and histograms growing
// scrape by scrape, with now and then a restart, a value denormal or near
// overflow, a gauge below zero, a histogram whose layout changes or whose
// sum is not finite, a signal that vanishes, a gap of minutes: what the
// adapters let through (see garbageSeries). The fuzzers see one scrape
// twice; this sees what happens between scrapes. Whatever the
// series, the observation holds no infinite value and attainments within
// [0, 1], the evaluation exports no infinite value, and none at all when
// it is not OK, and the SLO counters stay finite, never fall, and count no
// more good requests than requests.
func TestWindowReadsNoWrongNumberFromAnySeries(t *testing.T) {
	fixtures := map[string]string{
		"vllm":   "testdata/vllm-design-metrics-doc-example.prom",
		"sglang": "testdata/sglang-production-metrics-doc.prom",
		"tgi":    "testdata/tgi-synthetic.prom",
		"trtllm": "testdata/trtllm-tensorrtllm_backend-readme.prom",
	}
	series := 3000
	if testing.Short() {
		series = 300
	}
	profiles := fuzzProfiles(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, engine := range slices.Sorted(maps.Keys(fixtures)) {
		body, err := os.ReadFile(fixtures[engine])
		if err != nil {
			t.Fatal(err)
		}
		base := normalizeText(t, string(body), Options{Engine: engine})
		for n := range series {
			snaps := garbageSeries(rng, base, 16)
			w, err := NewWindow(time.Minute, 16)
			if err != nil {
				t.Fatal(err)
			}
			var slo SLOCounters
			for _, s := range snaps {
				before := slo
				slo.Add(s, &fuzzSLO)
				if msg := wrongCounters(before, slo); msg != "" {
					t.Fatalf("%s series %d at %s: the SLO counters %s", engine, n, s.Time.Format(time.TimeOnly), msg)
				}
				_ = w.Add(s) // a snapshot out of order is refused, not a crash
				at := s.Time.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
				o := Observe(w, at, &fuzzSLO)
				if msg := wrongObservation(o); msg != "" {
					t.Fatalf("%s series %d at %s: %s\nobservation %+v\nwindow %s", engine, n, at.Format(time.TimeOnly), msg, o, describe(w))
				}
				for _, p := range profiles {
					r := knee.Evaluate(o, p, knee.Options{})
					if inf := infiniteFloats(reflect.ValueOf(r), "Result"); len(inf) > 0 {
						t.Fatalf("%s series %d: the evaluation exports infinite %v\nobservation %+v", engine, n, inf, o)
					}
					if r.OK && !knee.Known(r.Headroom) {
						t.Fatalf("%s series %d: evaluation OK with headroom %v", engine, n, r.Headroom)
					}
				}
			}
		}
	}
}

// wrongCounters says what is wrong with the SLO counters after an Add, or
// "": kneewatch exports them as counters, so each must stay finite and
// never fall (Prometheus reads a fall as a restart, and the burn rate over
// it as everything counted so far), and no count of good requests may pass
// the requests counted.
func wrongCounters(before, after SLOCounters) string {
	for _, c := range []struct {
		name          string
		before, after float64
	}{{"total", before.Total, after.Total}, {"good TTFT", before.GoodTTFT, after.GoodTTFT}, {"good TPOT", before.GoodTPOT, after.GoodTPOT},
		{"TTFT sum", before.SumTTFT, after.SumTTFT}, {"TPOT count", before.CountTPOT, after.CountTPOT}, {"TPOT sum", before.SumTPOT, after.SumTPOT}} {
		if !knee.Known(c.after) {
			return fmt.Sprintf("%s is %v", c.name, c.after)
		}
		if c.after < c.before {
			return fmt.Sprintf("%s fell from %v to %v", c.name, c.before, c.after)
		}
	}
	for _, good := range []float64{after.GoodTTFT, after.GoodTPOT} {
		if good > after.Total*(1+1e-9) {
			return fmt.Sprintf("count %v good requests of %v", good, after.Total)
		}
	}
	return ""
}

// wrongObservation says what in o is a wrong number, or "".
func wrongObservation(o knee.Observation) string {
	if inf := infiniteFloats(reflect.ValueOf(o), "Observation"); len(inf) > 0 {
		return fmt.Sprintf("infinite %v", inf)
	}
	for name, a := range map[string]float64{"TTFT attainment": o.TTFTAttainment, "TPOT attainment": o.TPOTAttainment} {
		if knee.Known(a) && (a < 0 || a > 1) {
			return fmt.Sprintf("%s %v outside [0, 1]", name, a)
		}
	}
	return ""
}

// garbageSeries is n scrapes 5 s apart (now and then minutes apart)
// growing from base, with now and then one of the faults an upstream shows
// that the adapters let through (they refuse non-finite and negative
// counters, non-finite, negative or falling bucket counts, and histograms
// without a +Inf bucket; see TestAdapters…): finite values at any scale,
// gauges of any sign, a sum that is not finite, counters and histograms
// that restart, a bucket layout that changes, a signal that vanishes.
func garbageSeries(rng *rand.Rand, base Snapshot, n int) []Snapshot {
	huge := []float64{0, 5e-324, 1e-300, 1e300, math.MaxFloat64 / 2, math.MaxFloat64}
	hugeValue := func() float64 { return huge[rng.IntN(len(huge))] }
	cur := cloneSnapshot(base)
	at := time.Unix(1_800_000_000, 0)
	out := make([]Snapshot, 0, n)
	for range n {
		step := 5 * time.Second
		if rng.Float64() < 0.05 {
			step = time.Duration(1+rng.IntN(10)) * time.Minute
		}
		at = at.Add(step + time.Duration(rng.IntN(400)-200)*time.Millisecond)
		next := cloneSnapshot(cur)
		next.Time = at
		grow(rng, &next, step.Seconds())
		if rng.Float64() < 0.25 {
			switch rng.IntN(7) {
			case 0: // a restart: every counter back near zero
				for sig := range next.Counters {
					next.Counters[sig] = rng.Float64() * 10
				}
				for sig, h := range next.Histograms {
					next.Histograms[sig] = scaled(h, 0.001)
				}
			case 1:
				if sig, ok := anyKey(rng, next.Counters); ok {
					next.Counters[sig] = hugeValue()
				}
			case 2:
				if sig, ok := anyKey(rng, next.Gauges); ok {
					next.Gauges[sig] = hugeValue() * float64(1-2*rng.IntN(2))
				}
			case 3:
				if sig, ok := anyKey(rng, next.Histograms); ok {
					h := next.Histograms[sig]
					switch rng.IntN(4) {
					case 0: // one bucket and all above it jump
						v := hugeValue()
						for i := rng.IntN(len(h.Buckets)); i < len(h.Buckets); i++ {
							h.Buckets[i].Count = math.Max(h.Buckets[i].Count, v)
						}
					case 1:
						h.Sum = []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, math.MaxFloat64}[rng.IntN(5)]
					case 2:
						h.Count = hugeValue()
					case 3: // a bucket dropped: the layout changed (an upgrade)
						if len(h.Buckets) > 1 {
							i := rng.IntN(len(h.Buckets) - 1)
							h.Buckets = slices.Delete(h.Buckets, i, i+1)
						}
					}
					next.Histograms[sig] = h
				}
			case 4: // one histogram restarts alone
				if sig, ok := anyKey(rng, next.Histograms); ok {
					next.Histograms[sig] = scaled(next.Histograms[sig], rng.Float64()*0.5)
				}
			case 5: // a signal vanishes from this scrape
				if sig, ok := anyKey(rng, next.Counters); ok {
					delete(next.Counters, sig)
				}
				if sig, ok := anyKey(rng, next.Histograms); ok {
					delete(next.Histograms, sig)
				}
			case 6:
				if sig, ok := anyKey(rng, next.Gauges); ok {
					next.Gauges[sig] *= math.Exp(rng.NormFloat64() * 20)
				}
			}
		}
		out = append(out, next)
		// The fault stays in the series as the upstream served it, but
		// the next scrape grows from the last sane state half the time.
		if rng.Float64() < 0.5 {
			cur = next
		} else {
			cur.Time = at
			grow(rng, &cur, step.Seconds())
		}
	}
	return out
}

// grow advances a snapshot's counters and histograms by dt seconds of
// traffic and moves its gauges.
func grow(rng *rand.Rand, s *Snapshot, dt float64) {
	k := math.Exp(rng.NormFloat64()) // this scrape's traffic
	for sig, v := range s.Counters {
		s.Counters[sig] = v + k*dt*math.Max(1, math.Abs(v)/1e4)
	}
	for sig, h := range s.Histograms {
		last := h.Buckets[len(h.Buckets)-1].Count
		inc := k * dt
		for i := range h.Buckets {
			share := 1.0
			if last > 0 && !math.IsInf(last, 0) {
				share = h.Buckets[i].Count / last
			}
			h.Buckets[i].Count += inc * share
		}
		h.Count += inc
		mean := 1.0
		if h.Count > 0 {
			mean = h.Sum / h.Count
		}
		h.Sum += inc * mean
		s.Histograms[sig] = h
	}
	for sig, v := range s.Gauges {
		s.Gauges[sig] = v * math.Exp(rng.NormFloat64()*0.2)
	}
}

func scaled(h Histogram, f float64) Histogram {
	h.Buckets = slices.Clone(h.Buckets)
	for i := range h.Buckets {
		h.Buckets[i].Count *= f
	}
	h.Count *= f
	h.Sum *= f
	return h
}

func cloneSnapshot(s Snapshot) Snapshot {
	c := s
	c.Gauges = maps.Clone(s.Gauges)
	c.Counters = maps.Clone(s.Counters)
	c.Histograms = make(map[Signal]Histogram, len(s.Histograms))
	for sig, h := range s.Histograms {
		h.Buckets = slices.Clone(h.Buckets)
		c.Histograms[sig] = h
	}
	return c
}

func anyKey[V any](rng *rand.Rand, m map[Signal]V) (Signal, bool) {
	if len(m) == 0 {
		return SignalUnknown, false
	}
	keys := slices.Sorted(maps.Keys(m))
	return keys[rng.IntN(len(keys))], true
}

// describe is the window's snapshots, for a failure's message.
func describe(w *Window) string {
	var out string
	for i := range w.n {
		s := w.ring[(w.head+i)%w.capacity]
		out += fmt.Sprintf("\n  %s gauges %v counters %v", s.Time.Format("15:04:05.000"), s.Gauges, s.Counters)
		for _, sig := range slices.Sorted(maps.Keys(s.Histograms)) {
			h := s.Histograms[sig]
			out += fmt.Sprintf("\n    %s count %v sum %v buckets %v", sig, h.Count, h.Sum, h.Buckets)
		}
	}
	return out
}
