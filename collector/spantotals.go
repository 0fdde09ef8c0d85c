package collector

import (
	"slices"
	"time"
)

// spanTotals keeps, across scrapes, running totals of a fixed set of
// counters: at each scrape, how much each has grown since the history
// began. The increase over any span of scrapes is then the difference of
// two marks, and the history costs a few numbers per scrape rather than
// snapshots. MixHistory (requests and their tokens) and PromptTailHistory
// (the prompt-length buckets) each keep one.
//
// Marks are kept for MaxMixSpan, plus one at or before its start so a span
// of MaxMixSpan can still be measured. The totals of dropped marks are
// reused, so a replica's scrape allocates nothing here once its history
// spans MaxMixSpan. The zero spanTotals is ready to use.
type spanTotals struct {
	// prev is the counters at the latest mark (there is one when marks is
	// not empty).
	prev []float64
	// marks are the running totals at each scrape, oldest first.
	marks []spanMark
	// free holds the totals of dropped marks, for reuse.
	free [][]float64
}

type spanMark struct {
	at     time.Time
	totals []float64
}

// add records the counters read at one scrape. Each is a counter of its
// own: a decrease is a reset (an engine restart), and the new value is the
// increase. A scrape no later than the latest mark is ignored. Every call
// between two resets must pass the same number of counters.
func (s *spanTotals) add(at time.Time, counters []float64) {
	n := len(s.marks)
	if n > 0 && !at.After(s.marks[n-1].at) {
		return
	}
	totals := s.newTotals(len(counters))
	if n > 0 {
		copy(totals, s.marks[n-1].totals)
		for i, c := range counters {
			totals[i] += increaseSince(s.prev[i], c)
		}
	}
	s.prev = append(s.prev[:0], counters...)
	s.marks = append(s.marks, spanMark{at: at, totals: totals})
	cut := 0
	for cut+1 < len(s.marks) && at.Sub(s.marks[cut+1].at) >= MaxMixSpan {
		cut++
	}
	if cut > 0 {
		for _, m := range s.marks[:cut] {
			s.free = append(s.free, m.totals)
		}
		s.marks = slices.Delete(s.marks, 0, cut)
	}
}

// reset starts the history over, keeping the marks' totals for reuse.
func (s *spanTotals) reset() {
	for _, m := range s.marks {
		s.free = append(s.free, m.totals)
	}
	s.marks = s.marks[:0]
}

// forget starts the history over for counters of another number: no kept
// totals fit them.
func (s *spanTotals) forget() {
	s.marks, s.free = s.marks[:0], s.free[:0]
}

// newTotals is a zeroed slice of n totals, reused when one is free.
func (s *spanTotals) newTotals(n int) []float64 {
	if k := len(s.free); k > 0 && len(s.free[k-1]) == n {
		t := s.free[k-1]
		s.free = s.free[:k-1]
		clear(t)
		return t
	}
	return make([]float64, n)
}

// increaseSince is a counter's increase from prev to cur, a decrease read
// as a reset.
func increaseSince(prev, cur float64) float64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}
