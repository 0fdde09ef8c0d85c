package collector

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// mixSnap is a scrape at t0+s seconds whose engine has finished requests
// requests of prompt and output tokens each.
func mixSnap(s, requests, prompt, output float64) Snapshot {
	return snap(s, nil, map[Signal]float64{
		SignalRequestsFinished: requests,
		SignalPromptTokens:     requests * prompt,
		SignalGenerationTokens: requests * output,
	}, nil)
}

func TestMixHistoryFindsTheShortestSpanThatHoldsEnoughRequests(t *testing.T) {
	var h MixHistory
	// 0.2 requests/s of 3000-token prompts and 150-token outputs, scraped
	// every 15 s: 12 requests a minute.
	for s := 0.0; s <= 60; s += 15 {
		h.Add(mixSnap(s, 0.2*s, 3000, 150))
	}
	if sp, ok := h.Span(20, 20); ok {
		t.Fatalf("after 1 min (12 requests) Span(20, 20) = %+v, want none", sp)
	}
	for s := 75.0; s <= 300; s += 15 {
		h.Add(mixSnap(s, 0.2*s, 3000, 150))
	}
	sp, ok := h.Span(20, 20)
	if !ok {
		t.Fatal("after 5 min, no span of 20 requests")
	}
	// 20 requests take 100 s; the scrapes are 15 s apart, so 105 s.
	want := MixSpan{From: sec(195), To: sec(300), Requests: 21, PromptTokens: 21 * 3000, OutputTokens: 21 * 150}
	if !cmp.Equal(sp, want) {
		t.Errorf("Span(20, 20) = %+v, want %+v", sp, want)
	}
	// Asked for 100 where 5 min hold 60: the longest span, all of them.
	sp, ok = h.Span(20, 100)
	want = MixSpan{From: sec(0), To: sec(300), Requests: 60, PromptTokens: 60 * 3000, OutputTokens: 60 * 150}
	if !ok || !cmp.Equal(sp, want) {
		t.Errorf("Span(20, 100) = %+v, %v; want %+v", sp, ok, want)
	}
	// Asked for 40: the shortest span that holds them, 210 s at 15 s scrapes.
	if sp, ok = h.Span(20, 40); !ok || sp.From != sec(90) || sp.Requests != 42 {
		t.Errorf("Span(20, 40) = %+v, %v; want the 42 requests since 90 s", sp, ok)
	}
}

func TestMixHistoryCountsAcrossACounterReset(t *testing.T) {
	var h MixHistory
	h.Add(mixSnap(0, 100, 200, 100))
	h.Add(mixSnap(60, 110, 200, 100))
	// The engine restarted: its counters start again from 0, and the
	// 5 requests since are the increase.
	h.Add(mixSnap(120, 5, 1000, 500))
	h.Add(mixSnap(180, 15, 1000, 500))
	sp, ok := h.Span(20, 20)
	if !ok {
		t.Fatal("no span of 20 requests across the reset")
	}
	if sp.Requests != 25 || sp.PromptTokens != 10*200+15*1000 || sp.OutputTokens != 10*100+15*500 {
		t.Errorf("span across the reset = %+v, want 25 requests, 17000 prompt and 8500 output tokens", sp)
	}
}

func TestMixHistoryStartsOverWithoutTheTokenCounters(t *testing.T) {
	var h MixHistory
	for s := 0.0; s <= 300; s += 15 {
		h.Add(mixSnap(s, s, 200, 100))
	}
	// A scrape without the prompt-token counter: a span across it would
	// count requests without their tokens.
	h.Add(snap(315, nil, map[Signal]float64{SignalRequestsFinished: 315, SignalGenerationTokens: 315 * 100}, nil))
	if sp, ok := h.Span(1, 1); ok {
		t.Fatalf("Span after a scrape without token counters = %+v, want none", sp)
	}
	h.Add(mixSnap(330, 330, 200, 100))
	h.Add(mixSnap(345, 345, 200, 100))
	if sp, ok := h.Span(10, 10); !ok || sp.From != sec(330) || sp.Requests != 15 {
		t.Errorf("Span(10) after starting over = %+v, %v; want the 15 requests since 330 s", sp, ok)
	}
}

func TestMixHistoryLooksBackNoFurtherThanMaxMixSpan(t *testing.T) {
	var h MixHistory
	// One request every 40 s: 20 of them take 13 min 20 s.
	for s := 0.0; s <= 1800; s += 15 {
		h.Add(mixSnap(s, float64(int(s/40)), 200, 100))
	}
	if sp, ok := h.Span(20, 20); ok {
		t.Errorf("Span(20, 20) at 1.5 requests a minute = %+v, want none within %s", sp, MaxMixSpan)
	}
	sp, ok := h.Span(15, 15)
	if !ok {
		t.Fatal("no span of 15 requests in 10 min at 1.5 a minute")
	}
	if d := sp.To.Sub(sp.From); d > MaxMixSpan {
		t.Errorf("span of %s, longer than %s", d, MaxMixSpan)
	}
	// The history keeps what MaxMixSpan needs, not the whole run.
	if n := len(h.totals.marks); n > int(MaxMixSpan/(15*time.Second))+2 {
		t.Errorf("history holds %d marks after 30 min of 15 s scrapes, want about %d", n, int(MaxMixSpan/(15*time.Second))+1)
	}
}

// Like the prompt tail's, a replica's mix history costs no allocation per
// scrape once it spans MaxMixSpan: the totals of the marks it drops are
// reused.
func TestMixHistoryAllocatesNothingOnceFull(t *testing.T) {
	var h MixHistory
	s, n := 0.0, 0.0
	for ; s <= MaxMixSpan.Seconds()+60; s += 15 {
		n += 3
		h.Add(mixSnap(s, n, 200, 100))
	}
	next := mixSnap(s, n, 200, 100)
	allocs := testing.AllocsPerRun(100, func() {
		s += 15
		n += 3
		next.Time = sec(s)
		next.Counters[SignalRequestsFinished] = n
		next.Counters[SignalPromptTokens] = 200 * n
		next.Counters[SignalGenerationTokens] = 100 * n
		h.Add(next)
		if _, ok := h.Span(20, 20); !ok {
			t.Fatal("no span")
		}
	})
	if allocs != 0 {
		t.Errorf("Add and Span allocate %v times a scrape, want 0", allocs)
	}
}
