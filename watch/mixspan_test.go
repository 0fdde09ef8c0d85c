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
	widenMix(&o, lowRateHistory(), nil, "r", nil)
	// 100 requests would take 500 s: the 5 minutes of history hold 60.
	if o.MixRequests != 60 || o.MeanPromptTokens != 3000 || o.MeanOutputTokens != 150 {
		t.Errorf("widened mix = %g requests of %g / %g tokens, want the whole 5 min: 60 of 3000 / 150",
			o.MixRequests, o.MeanPromptTokens, o.MeanOutputTokens)
	}
}

func TestAWindowThatHoldsEnoughRequestsKeepsItsOwnMix(t *testing.T) {
	o := windowOf(25, 2000, 300)
	widenMix(&o, lowRateHistory(), nil, "r", nil)
	if o.MixRequests != 25 || o.MeanPromptTokens != 2000 || o.MeanOutputTokens != 300 {
		t.Errorf("mix = %g requests of %g / %g tokens, want the window's 25 of 2000 / 300", o.MixRequests, o.MeanPromptTokens, o.MeanOutputTokens)
	}
	unknown := knee.NewObservation() // no finished-request counter
	widenMix(&unknown, lowRateHistory(), nil, "r", nil)
	if knee.Known(unknown.MixRequests) || knee.Known(unknown.MeanPromptTokens) {
		t.Errorf("an engine without a finished-request count got a mix: %g requests of %g tokens", unknown.MixRequests, unknown.MeanPromptTokens)
	}
}

func TestTheLongerSpanLeavesTheProbesOut(t *testing.T) {
	// Over the 5 minutes the replica finished 60 requests; one was a
	// 16-token probe answered with 16 tokens.
	o := windowOf(12, 2000, 300)
	widenMix(&o, lowRateHistory(), probeTraffic{probe.Traffic{Requests: 1, PromptTokens: 16, OutputTokens: 16}}, "r", nil)
	if o.MixRequests != 59 || o.MeanPromptTokens != (60*3000-16)/59.0 || o.MeanOutputTokens != (60*150-16)/59.0 {
		t.Errorf("mix = %g requests of %g / %g tokens, want 59 of %g / %g", o.MixRequests, o.MeanPromptTokens, o.MeanOutputTokens,
			(60*3000-16)/59.0, (60*150-16)/59.0)
	}
	// When probes were most of it, too few requests are left: the window's
	// mix stands.
	o = windowOf(12, 2000, 300)
	widenMix(&o, lowRateHistory(), probeTraffic{probe.Traffic{Requests: 45, PromptTokens: 720, OutputTokens: 720}}, "r", nil)
	if o.MixRequests != 12 || o.MeanPromptTokens != 2000 {
		t.Errorf("mix = %g requests of %g tokens, want the window's 12 of 2000", o.MixRequests, o.MeanPromptTokens)
	}
}

// shiftedHistory is lowRateHistory whose last 2 minutes finished requests
// of 1000-token prompts and 600-token outputs instead.
func shiftedHistory() *collector.MixHistory {
	var h collector.MixHistory
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var n, prompt, output float64
	for s := 0; s <= 600; s += 15 {
		snap := collector.NewSnapshot("test")
		snap.Time = t0.Add(time.Duration(s) * time.Second)
		if s > 0 {
			d := 0.2 * 15
			n += d
			if s > 480 {
				prompt, output = prompt+1000*d, output+600*d
			} else {
				prompt, output = prompt+3000*d, output+150*d
			}
		}
		snap.Counters[collector.SignalRequestsFinished] = n
		snap.Counters[collector.SignalPromptTokens] = prompt
		snap.Counters[collector.SignalGenerationTokens] = output
		h.Add(snap)
	}
	return &h
}

func TestAShiftPlainInAFewRequestsIsReadWithoutTheLongerSpansLag(t *testing.T) {
	p := &knee.Profile{}
	p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens = 3000, 150
	p.Workload.PromptTokensCV, p.Workload.OutputTokensCV = 0.3, 0.5
	// The shortest span of 20 requests is the last 105 s, 21 requests of
	// the new mix: read there.
	o := windowOf(12, 1000, 600)
	widenMix(&o, shiftedHistory(), nil, "r", p)
	if o.MixRequests != 21 || o.MeanPromptTokens != 1000 || o.MeanOutputTokens != 600 {
		t.Errorf("mix = %g requests of %g / %g tokens, want the last 105 s': 21 of 1000 / 600", o.MixRequests, o.MeanPromptTokens, o.MeanOutputTokens)
	}
	// Without a profile to judge it by, the 100 requests of the last
	// 8 min 15 s, three quarters of them the old mix.
	o = windowOf(12, 1000, 600)
	widenMix(&o, shiftedHistory(), nil, "r", nil)
	if o.MixRequests < 100 || o.MeanPromptTokens < 2000 {
		t.Errorf("mix without a profile = %g requests of %g tokens, want the 100-request span's, mostly the old mix", o.MixRequests, o.MeanPromptTokens)
	}
	// A mix that has not moved is read over the longer span, as before.
	o = windowOf(12, 3000, 150)
	widenMix(&o, lowRateHistory(), nil, "r", p)
	if o.MixRequests != 60 {
		t.Errorf("steady mix read over %g requests, want the whole 5 min's 60", o.MixRequests)
	}
}
