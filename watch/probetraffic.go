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
	requests, errR := w.Increase(collector.SignalRequestsFinished, at)
	prompt, errP := w.Increase(collector.SignalPromptTokens, at)
	output, errO := w.Increase(collector.SignalGenerationTokens, at)
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
