package watch

import (
	"math"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/probe"
)

// probeTraffic reports fixed probe traffic for every replica.
type probeTraffic struct{ t probe.Traffic }

func (p probeTraffic) Summary(string) (probe.Summary, bool) {
	return probe.Summary{SuccessRatio: 1, Probes: p.t.Requests, Successes: p.t.Requests}, true
}

func (p probeTraffic) Traffic(string, time.Time, time.Time) (probe.Traffic, bool) { return p.t, true }

// TestProbeTrafficIsLeftOutOfTheMix: the engine counts kneewatch's probes
// like any request. Over a one-minute window an idle replica that served
// one 16-token probe read a mean output of 16 tokens, a drift of 0.92 from
// its 200-token profile, and the re-sweep alert went pending. Without the
// probe nothing is left to judge the mix by, so the drift is absent; a
// busy replica's mix is its users' alone.
func TestProbeTrafficIsLeftOutOfTheMix(t *testing.T) {
	prof := lightProfile() // mean prompt 300, output 200 tokens
	oneProbe := probe.Traffic{Requests: 1, PromptTokens: 4, OutputTokens: 16}
	tests := []struct {
		name        string
		users       float64 // user requests finished in the window, 300 prompt and 200 output tokens each
		probes      probe.Traffic
		noProbeInfo bool // the watcher has no probe runner: the old behaviour
		wantDrift   float64
	}{
		{"an idle replica whose window held one probe unknown to the watcher is one request, too few to judge", 0, oneProbe, true, math.NaN()},
		{"an idle replica whose window held one probe has no drift", 0, oneProbe, false, math.NaN()},
		{"a few user requests are too few to judge a mix", 5, oneProbe, false, math.NaN()},
		{"a busy replica's mix is its users' alone", 60, probe.Traffic{Requests: 2, PromptTokens: 8, OutputTokens: 32}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var probes probe.Summaries
			if !tt.noProbeInfo {
				probes = probeTraffic{tt.probes}
			}
			clock := fixtureTime
			w := NewWatcher(WatcherOptions{Interval: 15 * time.Second, Window: time.Minute, Now: func() time.Time { return clock }, Probes: probes})
			if err := w.SetTargets([]Target{{Replica: "r0", Engine: "vllm", MetricsURL: "http://r0/metrics", ProfileName: "llama", Profile: prof}}); err != nil {
				t.Fatal(err)
			}
			// Five scrapes 15 s apart: the window's increase is the requests
			// spread evenly over it, probes included.
			n := tt.users + float64(tt.probes.Requests)
			prompt := tt.users*300 + tt.probes.PromptTokens
			output := tt.users*200 + tt.probes.OutputTokens
			for i := range 5 {
				f := float64(i) / 4
				s := collector.NewSnapshot("vllm")
				s.Time = clock
				s.Gauges[collector.SignalRunning], s.Gauges[collector.SignalWaiting] = 0, 0
				s.Counters[collector.SignalRequestsFinished] = 1000 + f*n
				s.Counters[collector.SignalPromptTokens] = 300000 + f*prompt
				s.Counters[collector.SignalGenerationTokens] = 200000 + f*output
				if _, err := w.Replay([]ReplayScrape{{Replica: "r0", Engine: s}}); err != nil {
					t.Fatal(err)
				}
				clock = clock.Add(15 * time.Second)
			}
			r := w.Latest().Replicas[0]
			got := r.Result.MixDrift
			if math.IsNaN(tt.wantDrift) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tt.wantDrift) > 0.005) {
				t.Errorf("mix drift %v, want %v (mix requests %v, mean prompt %v, output %v)", got, tt.wantDrift,
					r.Observation.MixRequests, r.Observation.MeanPromptTokens, r.Observation.MeanOutputTokens)
			}
			if tt.noProbeInfo {
				// What the drift read before: the probe's 16 tokens as the mean.
				if old := math.Abs(r.Observation.MeanOutputTokens-200) / 200; math.Abs(old-0.92) > 1e-9 {
					t.Errorf("mean output %v tokens, want the probe's 16 (drift 0.92)", r.Observation.MeanOutputTokens)
				}
			}
			t.Logf("users %v, probes %d: mix drift %v over %v requests", tt.users, tt.probes.Requests, got, r.Observation.MixRequests)
		})
	}
}

func TestMixDriftNeedsEnoughRequests(t *testing.T) {
	p := lightProfile()
	for _, tt := range []struct {
		requests float64
		known    bool
	}{{math.NaN(), true}, {0, false}, {knee.MinMixRequests - 1, false}, {knee.MinMixRequests, true}, {500, true}} {
		o := knee.NewObservation()
		o.InFlight, o.MeanPromptTokens, o.MeanOutputTokens, o.MixRequests = 5, 300, 100, tt.requests
		r := knee.Evaluate(o, p, knee.Options{})
		if knee.Known(r.MixDrift) != tt.known {
			t.Errorf("over %v requests: mix drift %v, want known = %v", tt.requests, r.MixDrift, tt.known)
		}
	}
}
