package collector

import (
	"math"
	"slices"
	"testing"
	"time"
)

// promptSnap is a scrape at t0+s seconds whose prompt-length histogram has
// counted chat prompts (≤ 1000 tokens) and long ones (in (5000, 10000]).
func promptSnap(s, chat, long float64) Snapshot {
	bounds := []float64{1000, 2000, 5000, 10000}
	return snap(s, nil, nil, map[Signal]Histogram{SignalPromptLength: hist(bounds, chat, chat, chat, chat+long, chat+long)})
}

// A tenth of a percent of long prompts hides in a 1-minute window of 100
// requests (its p99 is a chat prompt) and stands out over ten minutes of
// them: 2% past 5000 tokens puts the p99 in that bucket.
func TestPromptTailHistoryReadsTheTailOverMoreRequestsThanTheWindow(t *testing.T) {
	var h PromptTailHistory
	// 100 requests a minute, scraped every 15 s; 2% long.
	for s := 0.0; s <= 600; s += 15 {
		n := s / 60 * 100
		h.Add(promptSnap(s, 0.98*n, 0.02*n))
	}
	tail, ok := h.Tail(1000)
	if !ok {
		t.Fatal("no tail over 10 minutes of 100 requests a minute")
	}
	if tail.Floor != 5000 || tail.Requests != 1000 || tail.From != sec(0) || tail.To != sec(600) {
		t.Errorf("Tail(1000) = %+v, want floor 5000 over the 1000 prompts since 0 s", tail)
	}
	// Asked for 200: the shortest span that observed them, 2 minutes.
	if tail, ok = h.Tail(200); !ok || tail.From != sec(480) || tail.Requests != 200 {
		t.Errorf("Tail(200) = %+v, %v; want the 200 prompts since 480 s", tail, ok)
	}
}

func TestPromptTailHistoryNeedsAHundredPrompts(t *testing.T) {
	var h PromptTailHistory
	// 9 requests a minute: 90 in 10 minutes.
	for s := 0.0; s <= 600; s += 60 {
		h.Add(promptSnap(s, s/60*8, s/60))
	}
	if tail, ok := h.Tail(1000); ok {
		t.Errorf("Tail(1000) over 90 prompts = %+v, want none: a p99 needs 100", tail)
	}
	// Ten more minutes: the history keeps MaxMixSpan, so still 90.
	for s := 660.0; s <= 1200; s += 60 {
		h.Add(promptSnap(s, s/60*8, s/60))
	}
	if tail, ok := h.Tail(1000); ok {
		t.Errorf("Tail(1000) looked back past MaxMixSpan: %+v", tail)
	}
}

func TestPromptTailHistoryCountsAcrossAResetAndStartsOverOnANewLayout(t *testing.T) {
	var h PromptTailHistory
	h.Add(promptSnap(0, 5000, 0))
	h.Add(promptSnap(60, 5100, 0))
	// The engine restarted: its buckets start from 0, and the 100 long
	// prompts since are the increase.
	h.Add(promptSnap(120, 0, 100))
	tail, ok := h.Tail(1000)
	if !ok || tail.Requests != 200 || tail.Floor != 5000 {
		t.Errorf("across a reset Tail = %+v, %v; want 200 prompts, half of them long (floor 5000)", tail, ok)
	}
	// Another layout: the spans would not line up, so the history starts
	// over.
	other := snap(180, nil, nil, map[Signal]Histogram{SignalPromptLength: hist([]float64{2000, 8000}, 300, 300, 300)})
	h.Add(other)
	if tail, ok := h.Tail(1000); ok {
		t.Errorf("after a change of layout Tail = %+v, want none until a second scrape", tail)
	}
	// A scrape without the histogram starts it over too: the span is the
	// two scrapes after it.
	h.Add(snap(240, nil, nil, nil))
	h.Add(promptSnap(300, 1000, 100))
	h.Add(promptSnap(360, 1100, 200))
	if tail, ok := h.Tail(1000); !ok || tail.Requests != 200 || tail.From != sec(300) || tail.Floor != 5000 {
		t.Errorf("after a scrape without the histogram Tail = %+v, %v; want the 200 prompts since 300 s", tail, ok)
	}
	// Chat prompts alone put the p99 in the lowest bucket: no floor.
	h.Add(promptSnap(420, 1300, 200))
	if tail, ok := h.Tail(100); ok {
		t.Errorf("Tail(100) over chat prompts = %+v, want none: the p99 lies in the lowest bucket", tail)
	}
}

// A replica's history costs no allocation per scrape once it spans
// MaxMixSpan: kneewatch keeps one for every replica it watches.
func TestPromptTailHistoryAllocatesNothingOnceFull(t *testing.T) {
	var h PromptTailHistory
	s := 0.0
	for ; s <= MaxMixSpan.Seconds()+60; s += 15 {
		h.Add(promptSnap(s, s, s/50))
	}
	next := promptSnap(s, s, s/50)
	buckets := next.Histograms[SignalPromptLength].Buckets
	allocs := testing.AllocsPerRun(100, func() {
		s += 15
		next.Time = sec(s)
		for i := range buckets {
			buckets[i].Count += 15 // 15 prompts a scrape, one of them in (1000, 2000]
		}
		buckets[0].Count -= 1
		h.Add(next)
		if _, ok := h.Tail(1000); !ok {
			t.Fatal("no tail")
		}
	})
	if allocs != 0 {
		t.Errorf("Add and Tail allocate %v times a scrape, want 0", allocs)
	}
}

// BenchmarkPromptTailHistory is one scrape's cost of the prompt tail over
// the history: Add, then Tail over 1000 prompts, with vLLM's 1-2-5 buckets
// up to 128k tokens, scrapes 5 s apart and the history full (MaxMixSpan).
// Compare it with watch's BenchmarkAssessReplica, the whole evaluation of
// a replica, in the same run.
func BenchmarkPromptTailHistory(b *testing.B) {
	var bounds []float64
	for e := 1.0; e <= 100000; e *= 10 {
		bounds = append(bounds, e, 2*e, 5*e)
	}
	uppers := append(slices.Clone(bounds), math.Inf(+1))
	counts := make([]float64, len(uppers))
	s := 0.0
	next := func() Snapshot {
		s += 5
		// 10 prompts a scrape: nine around 200 tokens, one around 3000.
		for i, ub := range uppers {
			switch {
			case ub >= 5000:
				counts[i] += 10
			case ub >= 500:
				counts[i] += 9
			}
		}
		return snap(s, nil, nil, map[Signal]Histogram{SignalPromptLength: hist(bounds, counts...)})
	}
	var h PromptTailHistory
	for range int(MaxMixSpan / (5 * time.Second)) {
		h.Add(next())
	}
	snaps := make([]Snapshot, b.N)
	for i := range snaps {
		snaps[i] = next()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		h.Add(snaps[i])
		if _, ok := h.Tail(1000); !ok {
			b.Fatal("no tail")
		}
	}
}
