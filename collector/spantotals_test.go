package collector

import (
	"math"
	"runtime"
	"testing"
	"time"
)

// The mix and prompt-tail histories are the per-replica state kept the
// longest: MaxMixSpan of scrapes. This measures what a replica's
// pair of them holds on the heap once full, with a scrape every 5 s (the
// chart's default evaluation interval) with vLLM's prompt-length layout
// (1-2-5 buckets to 500k tokens, 19 with +Inf), and holds it to two
// things: the histories stop growing once they span MaxMixSpan (the heap
// after 30 minutes is within 10% of the heap after 12), and a replica
// costs at most 64 KiB. By arithmetic a full pair holds about 122 marks
// each: 48 bytes a mark in each history's slice (about 6 KiB each with
// spare capacity), and totals of 160 bytes (the tail's 19 buckets) and 24
// (the mix's 3 counters) a mark, about 35 KiB in all. On 2026-12-06 it
// measured 38.5 KiB.
func TestSpanHistoriesStopGrowingAndFitAReplicasBudget(t *testing.T) {
	const replicas = 300
	var bounds []float64
	for e := 1.0; e <= 100000; e *= 10 {
		bounds = append(bounds, e, 2*e, 5*e)
	}
	counts := make([]float64, len(bounds)+1)
	mixes := make([]MixHistory, replicas)
	tails := make([]PromptTailHistory, replicas)
	s := 0.0
	scrapeFor := func(d time.Duration) {
		for end := s + d.Seconds(); s < end; {
			s += 5
			for i := range counts {
				if i >= 8 { // 10 prompts a scrape, 9 of them ≤ 500 tokens
					counts[i] += 9
				}
				if i >= 11 {
					counts[i]++
				}
			}
			n := counts[len(counts)-1]
			sn := snap(s, nil, map[Signal]float64{
				SignalRequestsFinished: n, SignalPromptTokens: 400 * n, SignalGenerationTokens: 200 * n,
			}, map[Signal]Histogram{SignalPromptLength: hist(bounds, counts...)})
			for r := range replicas {
				mixes[r].Add(sn)
				tails[r].Add(sn)
			}
		}
	}
	heap := func() float64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc)
	}
	base := heap()
	scrapeFor(12 * time.Minute)
	at12 := heap() - base
	scrapeFor(18 * time.Minute)
	at30 := heap() - base
	runtime.KeepAlive(mixes)
	runtime.KeepAlive(tails)
	if _, ok := tails[0].Tail(1000); !ok {
		t.Fatal("no prompt tail after 30 minutes")
	}
	if _, ok := mixes[0].Span(100, 1000); !ok {
		t.Fatal("no mix span after 30 minutes")
	}
	per12, per30 := at12/replicas, at30/replicas
	t.Logf("heap per replica (mix and prompt-tail histories, 5 s scrapes): %.1f KiB after 12 min, %.1f KiB after 30 min", per12/1024, per30/1024)
	if per30 > 1.1*per12 {
		t.Errorf("the histories kept growing past MaxMixSpan: %.1f KiB a replica after 12 min, %.1f KiB after 30", per12/1024, per30/1024)
	}
	if limit := 64.0 * 1024; per30 > limit || math.IsNaN(per30) {
		t.Errorf("a replica's histories hold %.1f KiB, over the %.0f KiB budget", per30/1024, limit/1024)
	}
}
