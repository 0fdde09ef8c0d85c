package watch

import (
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/probe"
)

// lowRateHistory is 5 minutes of a replica finishing 0.2 requests/s of
// 3000-token prompts and 150-token outputs, scraped every 15 s.
func lowRateHistory() *collector.MixHistory {
	var h collector.MixHistory
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for s := 0; s <= 300; s += 15 {
		snap := collector.NewSnapshot("test")
		snap.Time = t0.Add(time.Duration(s) * time.Second)
		n := 0.2 * float64(s)
		snap.Counters[collector.SignalRequestsFinished] = n
		snap.Counters[collector.SignalPromptTokens] = 3000 * n
		snap.Counters[collector.SignalGenerationTokens] = 150 * n
		h.Add(snap)
	}
	return &h
}

// windowOf is an observation whose window finished n requests of the
// given mean prompt and output.
func windowOf(n, prompt, output float64) knee.Observation {
	o := knee.NewObservation()
	o.MixRequests, o.MeanPromptTokens, o.MeanOutputTokens = n, prompt, output
	return o
}

func TestALowRateReplicasMixIsReadOverALongerSpan(t *testing.T) {
	o := windowOf(12, 2000, 300)
	widenMix(&o, lowRateHistory(), nil, "r")
	// 100 requests would take 500 s: the 5 minutes of history hold 60.
	if o.MixRequests != 60 || o.MeanPromptTokens != 3000 || o.MeanOutputTokens != 150 {
		t.Errorf("widened mix = %g requests of %g / %g tokens, want the whole 5 min: 60 of 3000 / 150",
			o.MixRequests, o.MeanPromptTokens, o.MeanOutputTokens)
	}
}

func TestAWindowThatHoldsEnoughRequestsKeepsItsOwnMix(t *testing.T) {
	o := windowOf(25, 2000, 300)
	widenMix(&o, lowRateHistory(), nil, "r")
	if o.MixRequests != 25 || o.MeanPromptTokens != 2000 || o.MeanOutputTokens != 300 {
		t.Errorf("mix = %g requests of %g / %g tokens, want the window's 25 of 2000 / 300", o.MixRequests, o.MeanPromptTokens, o.MeanOutputTokens)
	}
	unknown := knee.NewObservation() // no finished-request counter
	widenMix(&unknown, lowRateHistory(), nil, "r")
	if knee.Known(unknown.MixRequests) || knee.Known(unknown.MeanPromptTokens) {
		t.Errorf("an engine without a finished-request count got a mix: %g requests of %g tokens", unknown.MixRequests, unknown.MeanPromptTokens)
	}
}

func TestTheLongerSpanLeavesTheProbesOut(t *testing.T) {
	// Over the 5 minutes the replica finished 60 requests; one was a
	// 16-token probe answered with 16 tokens.
	o := windowOf(12, 2000, 300)
	widenMix(&o, lowRateHistory(), probeTraffic{probe.Traffic{Requests: 1, PromptTokens: 16, OutputTokens: 16}}, "r")
	if o.MixRequests != 59 || o.MeanPromptTokens != (60*3000-16)/59.0 || o.MeanOutputTokens != (60*150-16)/59.0 {
		t.Errorf("mix = %g requests of %g / %g tokens, want 59 of %g / %g", o.MixRequests, o.MeanPromptTokens, o.MeanOutputTokens,
			(60*3000-16)/59.0, (60*150-16)/59.0)
	}
	// When probes were most of it, too few requests are left: the window's
	// mix stands.
	o = windowOf(12, 2000, 300)
	widenMix(&o, lowRateHistory(), probeTraffic{probe.Traffic{Requests: 45, PromptTokens: 720, OutputTokens: 720}}, "r")
	if o.MixRequests != 12 || o.MeanPromptTokens != 2000 {
		t.Errorf("mix = %g requests of %g tokens, want the window's 12 of 2000", o.MixRequests, o.MeanPromptTokens)
	}
}
