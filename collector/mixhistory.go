package collector

import "time"

// MixHistory keeps, across scrapes, a replica's running totals of finished
// requests and their prompt and output tokens, so the request mix can be
// averaged over more time than the window when the window holds too few
// requests to judge it. A replica finishing 0.2 requests/s (an 8B/L4 RAG
// deployment at 0.7 of its knee) holds 12 requests in a 1-minute window,
// under knee.MinMixRequests in every window: without a longer span its mix
// was never read, and its knee never moved when its traffic turned to
// chat. Each scrape adds its counters' increase since the previous one (a
// decrease is a counter reset: the new value is the increase), so the
// history costs a few numbers per scrape, not snapshots.
//
// The zero MixHistory is ready to use. It is not safe for concurrent use;
// one evaluation loop owns it, as it owns the window.
type MixHistory struct {
	// prev is the engine's counters at the latest mark (there is one when
	// marks is not empty).
	prev mixCounters
	// marks are the running totals at each scrape, oldest first, kept for
	// MaxMixSpan.
	marks []mixMark
	// source names the counters the marks were read from (see MixSignals).
	source [3]Signal
}

// MaxMixSpan is the longest span a mix is averaged over: a mix this old
// says little about the traffic now. At 20 requests a span, it judges a
// replica finishing one request every 30 s.
const MaxMixSpan = 10 * time.Minute

type mixCounters struct{ requests, prompt, output float64 }

type mixMark struct {
	at     time.Time
	totals mixCounters
}

// Add records s's finished requests and their tokens (see MixSignals). A
// snapshot without them starts the history over: a span across it would
// count requests without their tokens.
func (h *MixHistory) Add(s Snapshot) {
	mix, ok := MixSignals(s)
	if !ok || s.Time.IsZero() {
		h.marks = h.marks[:0]
		return
	}
	if mix != h.source {
		// A change of source (the histograms appearing or going) starts
		// over too: their totals are not the counters'.
		h.marks, h.source = h.marks[:0], mix
	}
	c := mixCounters{requests: s.Counters[mix[0]], prompt: s.Counters[mix[1]], output: s.Counters[mix[2]]}
	if n := len(h.marks); n > 0 && !s.Time.After(h.marks[n-1].at) {
		return
	}
	var totals mixCounters
	if n := len(h.marks); n > 0 {
		totals = h.marks[n-1].totals
		totals.requests += increaseSince(h.prev.requests, c.requests)
		totals.prompt += increaseSince(h.prev.prompt, c.prompt)
		totals.output += increaseSince(h.prev.output, c.output)
	}
	h.prev = c
	h.marks = append(h.marks, mixMark{at: s.Time, totals: totals})
	// Keep one mark at or before the oldest span's start, so a span of
	// MaxMixSpan can still be measured.
	cut := 0
	for cut+1 < len(h.marks) && s.Time.Sub(h.marks[cut+1].at) >= MaxMixSpan {
		cut++
	}
	if cut > 0 {
		h.marks = append(h.marks[:0], h.marks[cut:]...)
	}
}

// increaseSince is a counter's increase from prev to cur, a decrease read
// as a reset.
func increaseSince(prev, cur float64) float64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}

// MixSpan is a request mix averaged over a span of scrapes.
type MixSpan struct {
	From, To                   time.Time
	Requests                   float64
	PromptTokens, OutputTokens float64
}

// Span returns the shortest span ending at the latest scrape, at most
// MaxMixSpan long, over which at least want requests finished; failing
// that, the longest such span if at least least finished in it. It returns
// false when the history holds neither.
func (h *MixHistory) Span(least, want float64) (MixSpan, bool) {
	n := len(h.marks)
	if n < 2 {
		return MixSpan{}, false
	}
	last := h.marks[n-1]
	best, found := MixSpan{}, false
	for i := n - 2; i >= 0; i-- {
		m := h.marks[i]
		if last.at.Sub(m.at) > MaxMixSpan {
			break
		}
		req := last.totals.requests - m.totals.requests
		if !(req > 0) || req < least {
			continue
		}
		best, found = MixSpan{From: m.at, To: last.at, Requests: req,
			PromptTokens: last.totals.prompt - m.totals.prompt,
			OutputTokens: last.totals.output - m.totals.output}, true
		if req >= want {
			break
		}
	}
	return best, found
}
