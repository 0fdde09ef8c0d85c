package collector

// The request mix (the mean prompt and output tokens per request that move
// the knee) is read from the per-request token histograms where the engine
// exports both: SignalMixRequests, SignalMixPromptTokens and
// SignalMixOutputTokens, their _count and _sums. Else it is read from the
// engine's token and finished-request counters (MixSignals).
//
// The histograms are observed once per request, as it finishes, so a
// window's mean is exactly that of the requests that finished in it.
// vLLM's counters are not aligned: it counts prompt tokens when a prefill
// completes and output tokens at every decode step, but requests when they
// finish. Their ratio is the mix only while the queue holds still. (SGLang
// counts all three as a request finishes, and TGI's token counts are its
// histograms' sums already: for them the two sources agree.) When a
// backlog is admitted, prefills run ahead of finishes: on the detection
// bench, a 70B long-context replica on a GPU slowing down read a mean 71%
// over its profile for a minute after its queue peaked, and the mix model
// moved its knee from 12 to 30 in flight.

// mixFromHistograms are the mix totals read from the histograms, and
// mixFromCounters their stand-ins, in the same order.
var (
	mixFromHistograms = [3]Signal{SignalMixRequests, SignalMixPromptTokens, SignalMixOutputTokens}
	mixFromCounters   = [3]Signal{SignalRequestsFinished, SignalPromptTokens, SignalGenerationTokens}
)

// keepWholeMixTotals drops a partial set of the histograms' mix totals (one
// of the two histograms missing or unreadable): a mean must not divide one
// source by the other.
func keepWholeMixTotals(s *Snapshot) {
	if !haveCounters(s, mixFromHistograms) {
		for _, sig := range mixFromHistograms {
			delete(s.Counters, sig)
		}
	}
}

// MixSignals names the counters s's request mix is read from: finished
// requests, their prompt tokens and their output tokens. ok is false when
// s has neither set.
func MixSignals(s Snapshot) (sigs [3]Signal, ok bool) {
	for _, set := range [][3]Signal{mixFromHistograms, mixFromCounters} {
		if haveCounters(&s, set) {
			return set, true
		}
	}
	return sigs, false
}

func haveCounters(s *Snapshot, sigs [3]Signal) bool {
	for _, sig := range sigs {
		if _, ok := s.Counters[sig]; !ok {
			return false
		}
	}
	return true
}
