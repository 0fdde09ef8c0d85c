package probe

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/config"
)

// fastProbes is a probe config for tests: ten probes a second, a generous
// load cap, so only what a test sets up skips probes.
func fastProbes() config.Probes {
	p := config.DefaultProbes()
	p.Enabled = true
	p.Interval = config.Duration(100 * time.Millisecond)
	p.Timeout = config.Duration(80 * time.Millisecond)
	p.PromptTokens, p.MaxTokens = 4, 2
	p.LoadRatioCap = 0.5
	return p
}

// countingServer answers every probe with two tokens and counts the
// requests and the most that were ever in flight at once.
type countingServer struct {
	*httptest.Server
	requests, inFlight, maxInFlight atomic.Int64
}

func newCountingServer(t *testing.T, delay time.Duration) *countingServer {
	cs := &countingServer{}
	cs.Server = httptest.NewServer(drained(func(w http.ResponseWriter, r *http.Request) {
		cs.requests.Add(1)
		n := cs.inFlight.Add(1)
		defer cs.inFlight.Add(-1)
		for {
			m := cs.maxInFlight.Load()
			if n <= m || cs.maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done(): // the probe timed out
			return
		}
		tokens(2, 0)(w, r)
	}))
	t.Cleanup(cs.Close)
	return cs
}

// runFor runs r against state for d and waits for it to stop.
func runFor(t *testing.T, r *Runner, state StateFunc, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := r.Run(ctx, state); err != nil {
		t.Fatal(err)
	}
}

func constState(st ReplicaState) StateFunc {
	return func(string) (ReplicaState, bool) { return st, true }
}

func TestProbesAreSkippedWhileTheReplicaIsSaturated(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	tests := []struct {
		name         string
		state        StateFunc
		skipPastKnee bool
		skipQueue    bool
		wantSent     bool
		wantReason   Reason
	}{
		{"past the knee with skip_past_knee on: skipped", constState(ReplicaState{Headroom: -0.2, QueueGrowthPerSecond: nan, Waiting: nan}), true, true, false, ReasonPastKnee},
		{"past the knee with skip_past_knee off: probed", constState(ReplicaState{Headroom: -0.2, QueueGrowthPerSecond: nan, Waiting: nan}), false, true, true, ""},
		{"a queue that is growing: skipped", constState(ReplicaState{Headroom: 0.3, QueueGrowthPerSecond: 0.5, Waiting: 2}), true, true, false, ReasonQueueGrowing},
		{"a queue that is growing with skip_queue_growing off: probed", constState(ReplicaState{Headroom: 0.3, QueueGrowthPerSecond: 0.5, Waiting: 2}), true, false, true, ""},
		{"a growing slope over an empty queue: probed", constState(ReplicaState{Headroom: 0.3, QueueGrowthPerSecond: 0.5, Waiting: 0}), true, true, true, ""},
		{"a steady queue within the knee: probed", constState(ReplicaState{Headroom: 0.1, QueueGrowthPerSecond: 0, Waiting: 3}), true, true, true, ""},
		{"unknown headroom (engine metrics down): probed", constState(ReplicaState{Headroom: nan, QueueGrowthPerSecond: nan, Waiting: nan}), true, true, true, ""},
		{"no evaluation yet: probed", func(string) (ReplicaState, bool) { return ReplicaState{}, false }, true, true, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newCountingServer(t, 0)
			p := fastProbes()
			p.SkipPastKnee, p.SkipQueueGrowing = tt.skipPastKnee, tt.skipQueue
			r, err := New(Options{Probes: p, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.SetTargets([]Target{{Replica: "r0", BaseURL: srv.URL + "/v1", KneeOutputTokensPerSecond: 1e6}}); err != nil {
				t.Fatal(err)
			}
			runFor(t, r, tt.state, 450*time.Millisecond)
			sent := srv.requests.Load()
			s := r.replicas["r0"]
			if tt.wantSent {
				// The last probe may be cut off by the end of the run: it is
				// neither a success nor a failure.
				if sent < 2 || s.success < uint64(sent)-1 || len(s.failures) > 0 {
					t.Errorf("server saw %d probes, %d succeeded, failures %v; want ≥ 2, all that finished succeeded", sent, s.success, s.failures)
				}
				return
			}
			if sent != 0 || s.skipped[tt.wantReason] < 2 {
				t.Errorf("server saw %d probes, skipped %v; want none sent and ≥ 2 skipped for %s", sent, s.skipped, tt.wantReason)
			}
		})
	}
}

func TestAtMostOneProbeIsInFlightPerReplica(t *testing.T) {
	t.Parallel()
	// Each answer takes 97 ms, the timeout is 99 ms, and slots come every
	// 90–110 ms: about half the slots come due while the previous probe
	// still runs. Those are skipped as in_flight, never sent beside it.
	srv := newCountingServer(t, 97*time.Millisecond)
	p := fastProbes()
	p.Timeout = config.Duration(99 * time.Millisecond)
	r, err := New(Options{Probes: p, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetTargets([]Target{{Replica: "a", BaseURL: srv.URL + "/v1", KneeOutputTokensPerSecond: 1e6}}); err != nil {
		t.Fatal(err)
	}
	runFor(t, r, nil, 1200*time.Millisecond)
	n, most, skipped := srv.requests.Load(), srv.maxInFlight.Load(), r.replicas["a"].skipped[ReasonInFlight]
	if n < 4 || most != 1 || skipped < 1 {
		t.Errorf("%d probes, at most %d in flight at once, %d skipped as in_flight; want ≥ 4, one at a time, some skipped", n, most, skipped)
	}
}

func TestEachReplicaIsProbedAboutOncePerInterval(t *testing.T) {
	t.Parallel()
	srv := newCountingServer(t, 0)
	r, err := New(Options{Probes: fastProbes(), Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var targets []Target
	for _, name := range []string{"a", "b", "c"} {
		targets = append(targets, Target{Replica: name, BaseURL: srv.URL + "/v1", KneeOutputTokensPerSecond: 1e6})
	}
	if err := r.SetTargets(targets); err != nil {
		t.Fatal(err)
	}
	runFor(t, r, nil, 1050*time.Millisecond)
	// 1.05 s at 100 ms ± 10%, first slot within the first interval: 9 to 11 each.
	for _, name := range []string{"a", "b", "c"} {
		if got := r.replicas[name].success; got < 9 || got > 11 {
			t.Errorf("replica %s was probed %d times in 1.05 s at a 100 ms interval, want 9–11", name, got)
		}
	}
}

func TestTargetsCanChangeWhileRunning(t *testing.T) {
	t.Parallel()
	srv := newCountingServer(t, 0)
	r, err := New(Options{Probes: fastProbes(), Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	a := Target{Replica: "a", BaseURL: srv.URL + "/v1", KneeOutputTokensPerSecond: 1e6}
	b := Target{Replica: "b", BaseURL: srv.URL + "/v1", KneeOutputTokensPerSecond: 1e6}
	if err := r.SetTargets([]Target{a}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx, nil) }()
	time.Sleep(300 * time.Millisecond)
	if err := r.SetTargets([]Target{b}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	cancel()
	<-done
	if _, ok := r.Summary("a"); ok {
		t.Error("replica a was removed but still has a summary")
	}
	if s, ok := r.Summary("b"); !ok || s.Successes < 1 {
		t.Errorf("replica b added while running: summary %+v, %v; want probes", s, ok)
	}
}

func TestBadOptionsAndTargetsAreErrorsNamingTheField(t *testing.T) {
	tests := []struct {
		name string
		edit func(*config.Probes)
		want string
	}{
		{"a timeout as long as the interval", func(p *config.Probes) { p.Timeout = p.Interval }, "probes.timeout 100ms must be above 0 and shorter than probes.interval (100ms)"},
		{"no interval", func(p *config.Probes) { p.Interval = 0 }, "probes.interval must be above 0, got 0s"},
		{"no prompt", func(p *config.Probes) { p.PromptTokens = 0 }, "probes.prompt_tokens must be at least 1, got 0"},
		{"no output", func(p *config.Probes) { p.MaxTokens = 0 }, "probes.max_tokens must be at least 1, got 0"},
		{"an unknown API", func(p *config.Probes) { p.API = "embeddings" }, `probes.api: unknown API "embeddings" (want completions or chat)`},
		{"a load cap of 1", func(p *config.Probes) { p.LoadRatioCap = 1 }, "probes.load_ratio_cap 1 is outside (0, 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fastProbes()
			tt.edit(&p)
			_, err := New(Options{Probes: p})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New() error = %v, want %q", err, tt.want)
			}
		})
	}

	r, err := New(Options{Probes: fastProbes()})
	if err != nil {
		t.Fatal(err)
	}
	targetTests := []struct {
		name    string
		targets []Target
		want    string
	}{
		{"a target without a name", []Target{{BaseURL: "http://h/v1"}}, "probe target 0 (http://h/v1): no replica name"},
		{"a name twice", []Target{{Replica: "a", BaseURL: "http://h/v1"}, {Replica: "a", BaseURL: "http://g/v1"}}, `probe target "a" appears twice`},
		{"a URL without a scheme", []Target{{Replica: "a", BaseURL: "h:8000/v1"}}, `probe target "a": OpenAI base URL "h:8000/v1" is not an http(s) URL with a host`},
	}
	for _, tt := range targetTests {
		t.Run(tt.name, func(t *testing.T) {
			if err := r.SetTargets(tt.targets); err == nil || err.Error() != tt.want {
				t.Errorf("SetTargets() error = %v, want %q", err, tt.want)
			}
		})
	}
}
