package collector

import (
	"testing"
	"time"
)

// BenchmarkWindowUpdateAndQuantile adds one snapshot of the full vLLM scrape
// to a 5-minute window of 15 s scrapes (20 snapshots) and computes what an
// evaluation reads from it: p99 TTFT, TTFT SLO attainment, output token
// rate and mean in-flight requests.
func BenchmarkWindowUpdateAndQuantile(b *testing.B) {
	base := normalizeText(b, readFixture(b, "vllm-v1-full-synthetic.prom"), Options{})
	// Pre-build a cycle of growing snapshots so the loop measures only the
	// window's own work.
	const cycle = 64
	snaps := make([]Snapshot, cycle)
	for i := range snaps {
		s := base
		s.Counters = map[Signal]float64{SignalGenerationTokens: base.Counters[SignalGenerationTokens] + float64(i)*900}
		h := base.Histograms[SignalTTFT]
		grown := Histogram{Sum: h.Sum + float64(i), Count: h.Count + float64(i)*20, Buckets: make([]Bucket, len(h.Buckets))}
		for j, bk := range h.Buckets {
			grown.Buckets[j] = Bucket{UpperBound: bk.UpperBound, Count: bk.Count + float64(i*j)}
		}
		s.Histograms = map[Signal]Histogram{SignalTTFT: grown}
		snaps[i] = s
	}
	w, err := NewWindow(5*time.Minute, 21)
	if err != nil {
		b.Fatal(err)
	}
	at := t0
	add := func(i int) {
		at = at.Add(15 * time.Second)
		s := snaps[i%cycle]
		s.Time = at
		if err := w.Add(s); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 20 {
		add(i)
	}
	b.ReportAllocs()
	i := 20
	for b.Loop() {
		add(i)
		i++
		if _, err := w.HistogramQuantile(SignalTTFT, 0.99, at); err != nil {
			b.Fatal(err)
		}
		if _, err := w.SLOAttainment(SignalTTFT, 0.5, at); err != nil {
			b.Fatal(err)
		}
		if _, err := w.Rate(SignalGenerationTokens, at); err != nil {
			b.Fatal(err)
		}
		if _, err := w.GaugeMean(at, SignalRunning, SignalWaiting); err != nil {
			b.Fatal(err)
		}
	}
}
