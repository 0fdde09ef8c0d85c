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
	// totals are the running totals of finished requests, prompt tokens
	// and output tokens, in that order.
	totals spanTotals
	// source names the counters the totals were read from (see MixSignals).
	source [3]Signal
	// counters is Add's reading of them.
	counters [3]float64
}

// MaxMixSpan is the longest span a mix is averaged over: a mix this old
// says little about the traffic now. At 20 requests a span, it judges a
// replica finishing one request every 30 s.
const MaxMixSpan = 10 * time.Minute

// Add records s's finished requests and their tokens (see MixSignals). A
// snapshot without them starts the history over: a span across it would
// count requests without their tokens.
func (h *MixHistory) Add(s Snapshot) {
	mix, ok := MixSignals(s)
	if !ok || s.Time.IsZero() {
		h.totals.reset()
		return
	}
	if mix != h.source {
		// A change of source (the histograms appearing or going) starts
		// over too: their totals are not the counters'.
		h.totals.reset()
		h.source = mix
	}
	for i, sig := range mix {
		h.counters[i] = s.Counters[sig]
	}
	h.totals.add(s.Time, h.counters[:])
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
	marks := h.totals.marks
	n := len(marks)
	if n < 2 {
		return MixSpan{}, false
	}
	last := marks[n-1]
	best, found := MixSpan{}, false
	for i := n - 2; i >= 0; i-- {
		m := marks[i]
		if last.at.Sub(m.at) > MaxMixSpan {
			break
		}
		req := last.totals[0] - m.totals[0]
		if !(req > 0) || req < least {
			continue
		}
		best, found = MixSpan{From: m.at, To: last.at, Requests: req,
			PromptTokens: last.totals[1] - m.totals[1],
			OutputTokens: last.totals[2] - m.totals[2]}, true
		if req >= want {
			break
		}
	}
	return best, found
}
