package collector

import (
	"sort"
	"time"
)

// PromptTailHistory keeps, across scrapes, the running totals of a
// replica's prompt-length histogram buckets, so the tail of its prompts can
// be read over more requests than the window holds.
//
// A p99 over one window's hundred-odd requests is its one or two longest
// prompts, and a heavy minority hides in it: on the simulator, 8B/L4 chat
// with a tenth of its traffic turned code finishes about 110 requests a
// minute at its knee, one in a hundred past its window's p99 floor is
// chance for chat's own prompts, and the mix model put the knee's rate 80%
// over the truth. Judged over a thousand requests, the share past the
// floor is evidence (knee.Profile.heavyTailGrowth), and the error falls to
// +22% (TestMixModelPredictsKneesAtMixesItWasNotFittedTo, read live). A
// replica finishing under 100 requests a minute has no window p99 at all;
// over the history it has one.
//
// The zero PromptTailHistory is ready to use. It is not safe for concurrent
// use; one evaluation loop owns it, as it owns the window.
type PromptTailHistory struct {
	// bounds are the buckets' upper bounds the totals follow.
	bounds []float64
	// totals are the running totals of each bucket's count.
	totals spanTotals
	// counts is Add's reading of the buckets, and scratch Tail's: a
	// replica's scrape then allocates nothing here once its history spans
	// MaxMixSpan.
	counts  []float64
	scratch []Bucket
}

// Add records s's prompt-length histogram. A snapshot without one, or with
// another bucket layout, starts the history over: a span across it would
// count buckets that do not line up.
func (h *PromptTailHistory) Add(s Snapshot) {
	hist, ok := s.Histograms[SignalPromptLength]
	if !ok || s.Time.IsZero() || len(hist.Buckets) < 2 {
		h.totals.reset()
		return
	}
	if !sameBounds(h.bounds, hist.Buckets) {
		h.totals.forget()
		h.bounds = h.bounds[:0]
		for _, b := range hist.Buckets {
			h.bounds = append(h.bounds, b.UpperBound)
		}
	}
	// Each bucket is a counter of its own, reset with the rest when the
	// engine restarts.
	h.counts = h.counts[:0]
	for _, b := range hist.Buckets {
		h.counts = append(h.counts, b.Count)
	}
	h.totals.add(s.Time, h.counts)
}

func sameBounds(bounds []float64, buckets []Bucket) bool {
	if len(bounds) != len(buckets) {
		return false
	}
	for i, b := range buckets {
		if b.UpperBound != bounds[i] {
			return false
		}
	}
	return true
}

// PromptTail is the floor of the bucket holding the 99th percentile of the
// prompts that finished in a span of scrapes (a lower bound on the p99, as
// Observe reads the window's), and how many prompts it was read over.
type PromptTail struct {
	From, To time.Time
	Floor    float64
	Requests float64
}

// Tail returns the prompt tail over the shortest span ending at the latest
// scrape, at most MaxMixSpan long, in which at least want prompts were
// observed; failing that, over the longest such span if it holds the 100
// a p99 needs. It returns false when the history holds neither, or when
// the p99 lies in the lowest bucket (no floor).
func (h *PromptTailHistory) Tail(want float64) (PromptTail, bool) {
	marks := h.totals.marks
	n := len(marks)
	if n < 2 {
		return PromptTail{}, false
	}
	last := marks[n-1]
	// Both searches are binary: the marks are in time order, and the
	// prompts observed since a mark only shrink toward the latest.
	oldest := sort.Search(n-1, func(i int) bool { return last.at.Sub(marks[i].at) <= MaxMixSpan })
	if oldest == n-1 {
		return PromptTail{}, false
	}
	// The latest mark since which fewer than want were observed; the one
	// before it is the shortest span's start, or the oldest when even the
	// oldest span holds fewer.
	from := sort.Search(n-1, func(i int) bool { return observed(last, marks[i]) < want }) - 1
	from = max(from, oldest)
	m := marks[from]
	count := observed(last, m)
	h.scratch = h.scratch[:0]
	for i, ub := range h.bounds {
		h.scratch = append(h.scratch, Bucket{UpperBound: ub, Count: last.totals[i] - m.totals[i]})
	}
	floor := p99BucketFloor(h.scratch, count)
	if !(floor > 0) {
		return PromptTail{}, false
	}
	return PromptTail{From: m.at, To: last.at, Floor: floor, Requests: count}, true
}

// observed is how many prompts the +Inf bucket counted between two marks.
func observed(last, m spanMark) float64 {
	return last.totals[len(last.totals)-1] - m.totals[len(m.totals)-1]
}
