package collector

import (
	"slices"
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
	// prev is the histogram's cumulative bucket counts at the latest mark.
	prev []float64
	// marks are the running totals of each bucket's increase at each
	// scrape, oldest first, kept for MaxMixSpan.
	marks []tailMark
	// free holds the totals of marks dropped from the front, reused by Add;
	// scratch is Tail's buckets. A replica's scrape then allocates nothing
	// here once its history spans MaxMixSpan.
	free    [][]float64
	scratch []Bucket
}

type tailMark struct {
	at     time.Time
	totals []float64
}

// Add records s's prompt-length histogram. A snapshot without one, or with
// another bucket layout, starts the history over: a span across it would
// count buckets that do not line up.
func (h *PromptTailHistory) Add(s Snapshot) {
	hist, ok := s.Histograms[SignalPromptLength]
	if !ok || s.Time.IsZero() || len(hist.Buckets) < 2 {
		h.clear()
		return
	}
	if !sameBounds(h.bounds, hist.Buckets) {
		h.clear()
		h.free = h.free[:0]
		h.bounds = h.bounds[:0]
		for _, b := range hist.Buckets {
			h.bounds = append(h.bounds, b.UpperBound)
		}
	}
	n := len(h.marks)
	if n > 0 && !s.Time.After(h.marks[n-1].at) {
		return
	}
	totals := h.newTotals(len(hist.Buckets))
	if n > 0 {
		copy(totals, h.marks[n-1].totals)
		for i, b := range hist.Buckets {
			// Each bucket is a counter of its own, reset with the rest
			// when the engine restarts.
			totals[i] += increaseSince(h.prev[i], b.Count)
		}
	}
	h.prev = h.prev[:0]
	for _, b := range hist.Buckets {
		h.prev = append(h.prev, b.Count)
	}
	h.marks = append(h.marks, tailMark{at: s.Time, totals: totals})
	cut := 0
	for cut+1 < len(h.marks) && s.Time.Sub(h.marks[cut+1].at) >= MaxMixSpan {
		cut++
	}
	if cut > 0 {
		for _, m := range h.marks[:cut] {
			h.free = append(h.free, m.totals)
		}
		h.marks = slices.Delete(h.marks, 0, cut)
	}
}

// clear drops every mark, keeping their totals for reuse.
func (h *PromptTailHistory) clear() {
	for _, m := range h.marks {
		h.free = append(h.free, m.totals)
	}
	h.marks = h.marks[:0]
}

// newTotals is a zeroed slice of n totals, reused when one is free.
func (h *PromptTailHistory) newTotals(n int) []float64 {
	if k := len(h.free); k > 0 && len(h.free[k-1]) == n {
		t := h.free[k-1]
		h.free = h.free[:k-1]
		clear(t)
		return t
	}
	return make([]float64, n)
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
	n := len(h.marks)
	if n < 2 {
		return PromptTail{}, false
	}
	last := h.marks[n-1]
	// Both searches are binary: the marks are in time order, and the
	// prompts observed since a mark only shrink toward the latest.
	oldest := sort.Search(n-1, func(i int) bool { return last.at.Sub(h.marks[i].at) <= MaxMixSpan })
	if oldest == n-1 {
		return PromptTail{}, false
	}
	// The latest mark since which fewer than want were observed; the one
	// before it is the shortest span's start, or the oldest when even the
	// oldest span holds fewer.
	from := sort.Search(n-1, func(i int) bool { return observed(last, h.marks[i]) < want }) - 1
	from = max(from, oldest)
	m := h.marks[from]
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
func observed(last, m tailMark) float64 {
	return last.totals[len(last.totals)-1] - m.totals[len(m.totals)-1]
}
