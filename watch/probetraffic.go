package watch

import (
	"time"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/probe"
)

// excludeProbeTraffic takes the replica's own probes out of the request mix
// the drift is measured on: the window's finished requests and tokens less
// what the probes that finished in the window sent and received. The
// engine counts a probe like any request, so without this an idle replica
// whose window held one 16-token probe read a mean output of 16 tokens, a
// drift of 0.92 from a 200-token profile. With no requests but the probes
// left, the means are unknown (and MixRequests 0: no drift).
func excludeProbeTraffic(o *knee.Observation, w *collector.Window, at time.Time, t probe.Traffic) {
	if t.Requests == 0 || !knee.Known(o.MixRequests) {
		return
	}
	latest, _ := w.Latest()
	mix, ok := collector.MixSignals(latest)
	if !ok {
		return
	}
	requests, errR := w.Increase(mix[0], at)
	prompt, errP := w.Increase(mix[1], at)
	output, errO := w.Increase(mix[2], at)
	if errR != nil {
		return
	}
	n := requests - float64(t.Requests)
	o.MixRequests = max(n, 0)
	mean := func(total float64, err error, probes float64) float64 {
		if err != nil || n < 1 {
			return knee.Unknown()
		}
		return max(total-probes, 0) / n
	}
	o.MeanPromptTokens = mean(prompt, errP, t.PromptTokens)
	o.MeanOutputTokens = mean(output, errO, t.OutputTokens)
}

// widenMix reads the request mix over a longer span than the window when
// the window finished too few requests to judge it (knee.MinMixRequests).
// A span of knee.MinMixRequests whose means are already clearly off the
// profile's (knee.Profile.MixShiftClear) is read as it is: a shift that
// plain is read within a few requests, not once the longer span has taken
// it in. Otherwise it is the shortest span of the replica's history, up to
// collector.MaxMixSpan, that finished widenedMixRequests, or the longest
// that finished at least knee.MinMixRequests. Each span is read less the
// probes that finished in it. A low-rate replica's mix is then read
// minutes late rather than never. The window's own means stand when it
// held enough, when the engine counts no finished requests, or when no
// span does.
//
// The 20-request span is what lets a low-rate replica's knee follow its
// mix: an 8B/L4 RAG replica at 0.16 requests/s, half its traffic turned
// code in one step, read the old mix for 2 minutes instead of 10 (tune
// 1122). With it and the whole rise of a clear shift
// (knee.mixShift.speedKneeFactor), on the tune half (132 scenarios,
// 2026-12-06) the headroom error's p95 went mix-step 0.287 -> 0.206 and
// mix-ramp 0.268 -> 0.265, false pages in all 14 -> 13, safe scenarios
// paged, early pages and abrupt onsets on time unchanged; on the tune
// scenarios drawn 264 strong that are not in it, mix-ramp 0.231 -> 0.191
// and mix-step 0.216 -> 0.222 (near the knee, where kneewatch read high,
// its p95 0.408 -> 0.451), pages unchanged. The other families moved by
// 0.001 or less.
func widenMix(o *knee.Observation, h *collector.MixHistory, probes probe.Summaries, replica string, p *knee.Profile) {
	if !knee.Known(o.MixRequests) || o.MixRequests >= knee.MinMixRequests {
		return
	}
	m, ok := mixSpan(h, probes, replica, knee.MinMixRequests)
	if !ok || !p.MixShiftClear(m.prompt, m.output, m.requests) {
		m, ok = mixSpan(h, probes, replica, widenedMixRequests)
	}
	if ok {
		o.MixRequests, o.MeanPromptTokens, o.MeanOutputTokens = m.requests, m.prompt, m.output
	}
}

// spanMix is a request mix read over a span: its finished requests and
// their mean prompt and output tokens.
type spanMix struct{ requests, prompt, output float64 }

// mixSpan is the request mix over the shortest span of h that finished
// want requests, or the longest that finished at least
// knee.MinMixRequests, less the probes that finished in it; false when no
// span holds knee.MinMixRequests besides the probes.
func mixSpan(h *collector.MixHistory, probes probe.Summaries, replica string, want float64) (spanMix, bool) {
	span, ok := h.Span(knee.MinMixRequests, want)
	if !ok {
		return spanMix{}, false
	}
	var t probe.Traffic
	if probes != nil {
		t, _ = probes.Traffic(replica, span.From, span.To)
	}
	n := span.Requests - float64(t.Requests)
	if n < knee.MinMixRequests {
		return spanMix{}, false
	}
	return spanMix{requests: n, prompt: max(span.PromptTokens-t.PromptTokens, 0) / n, output: max(span.OutputTokens-t.OutputTokens, 0) / n}, true
}

// widenedMixRequests is how many requests a widened span of the mix aims
// to hold: as many as the sustained headroom averages over. Spans of 20
// (knee.MinMixRequests, the least a window is judged on) moved the knees of
// low-rate replicas whose mix held still by the noise of their means: on
// the tune half drawn 264 strong, the headroom-error p95 of the plateaus
// rose 0.064 -> 0.079 and of the square waves 0.074 -> 0.083; spans of 100
// gave 0.070 and 0.076. The mix ramps' p95 fell 0.384 -> 0.344 with 100
// (0.342 with 20); the mix steps' rose 0.234 -> 0.242 (0.241).
// Widening every window of fewer than 100 requests to a 100-request span,
// not only those under knee.MinMixRequests, to steady the knee a blend
// moves (a low-rate 70B RAG replica turned 30% code read its moved knee
// anywhere from 6 to 18 in flight, minute to minute, against a true 9.7),
// changed nothing that counts on the tune half (2026-12-07): mix-step's
// p95 0.195 -> 0.200, mix-ramp 0.253 -> 0.254, no page moved. What is
// left there is mostly the model's reading of the blend, not the noise of
// its means.
const widenedMixRequests = 100

// readSpanTail sets o's prompt tail over the replica's recent history: the
// shortest span up to collector.MaxMixSpan that observed spanTailPrompts
// prompts, or the longest that observed the 100 a p99 needs. The probes'
// prompts are short and stay in it: they lower the p99 a little, never
// raise it.
func readSpanTail(o *knee.Observation, h *collector.PromptTailHistory) {
	t, ok := h.Tail(spanTailPrompts)
	if !ok {
		return
	}
	o.SpanPromptTokensP99, o.SpanPromptRequests = t.Floor, t.Requests
}

// spanTailPrompts is how many prompts the history's tail aims to be read
// over: ten windows' worth at the rates where a minority hides in one
// (8B/L4 chat with a tenth of code traffic finishes about 110 a minute at
// its knee).
const spanTailPrompts = 1000
