package sweep

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
)

func TestATrialsInFlightIsTheExactIntegralOverItsSteadyPart(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ok := func(start, ttft, e2e float64) Result {
		return Result{Start: at(start), TTFT: time.Duration(ttft * 1e9), E2E: time.Duration(e2e * 1e9), OutputTokens: 11, PromptTokens: 5, Request: Request{PromptTokens: 5, MaxTokens: 11}}
	}
	reqs := []*sentRequest{
		{sent: at(0), done: at(2), res: ok(0, 0.1, 2)},
		{sent: at(1), done: at(3), res: ok(1, 0.1, 2)},
		// Still in flight at the end: cut off, counted up to the end only.
		{sent: at(2.5), done: at(10), res: Result{Start: at(2.5), TTFT: 200 * time.Millisecond, Err: context.Canceled}, cancelled: true},
	}
	slo := knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(time.Second), Quantile: 0.99}
	tr := Trial{Steady: 3 * time.Second}
	judgeTrial(&tr, reqs, TrialConfig{SLO: slo, Tick: time.Second, SLOWindow: time.Second}, at(1), at(4))
	// Overlaps with [1, 4]: 1 + 2 + 1.5 = 4.5 request-seconds over 3 s.
	if tr.InFlight != 1.5 || tr.Point.Concurrency != 1.5 {
		t.Errorf("mean in-flight %g (point %g), want 1.5", tr.InFlight, tr.Point.Concurrency)
	}
	// Completed in the steady part: the first two; the cut-off one is not
	// a completion, nor an error.
	if len(tr.Completed) != 2 || tr.Errors != 0 || tr.Point.ErrorRate != 0 {
		t.Errorf("completed %d, errors %d (rate %g), want 2 and none", len(tr.Completed), tr.Errors, tr.Point.ErrorRate)
	}
	// 2 × 11 tokens over 3 s.
	if got := tr.Point.OutputTokensPerSecond; got < 7.33 || got > 7.34 {
		t.Errorf("output tok/s %g, want 22 ÷ 3", got)
	}
	// Three TTFT events are too few for a windowed p99: never judged, so
	// not kept (a trial too short to judge is not waved through).
	if tr.Kept || tr.Ticks != 4 || tr.Judged != 0 || !strings.Contains(tr.Breach, "no tick of the steady part could be judged") {
		t.Errorf("kept %v (%q), ticks %d judged %d; want not kept with 4 unjudged ticks", tr.Kept, tr.Breach, tr.Ticks, tr.Judged)
	}
}

func TestATrialBreakingTheWindowedSLOSaysWhichPercentileAndWhen(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	// 300 requests, one every 100 ms; from 20 s on their TTFT is 2 s.
	reqs := evenRequests(t0, 300, 100*time.Millisecond, func(i int) time.Duration {
		if i >= 200 {
			return 2 * time.Second
		}
		return 100 * time.Millisecond
	})
	slo := knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(50 * time.Millisecond), Quantile: 0.99}
	from, to := t0.Add(15*time.Second), t0.Add(30*time.Second)
	tr := Trial{Steady: to.Sub(from)}
	judgeTrial(&tr, reqs, TrialConfig{SLO: slo, Tick: time.Second, SLOWindow: 10 * time.Second}, from, to)
	// The first 2 s TTFT (sent at 20 s) is a known miss from 21 s, when it
	// passes the 1 s threshold (knee.TTFTByDeadline), not from its first
	// token at 22 s; the window's p99 over ~100 requests crosses 1 s once
	// two of them are in it: at the 22 s tick.
	if tr.Kept || !strings.Contains(tr.Breach, "p99 TTFT") || !strings.Contains(tr.Breach, "> 1s at 7s into the steady part") || strings.Contains(tr.Breach, "TPOT") {
		t.Errorf("kept %v, breach %q: want the TTFT p99 broken 7 s into the steady part", tr.Kept, tr.Breach)
	}
	if tr.Judged != tr.Ticks || tr.Ticks != 16 {
		t.Errorf("judged %d of %d ticks, want all 16", tr.Judged, tr.Ticks)
	}
}

// evenRequests are n completed requests sent every gap from t0, the i-th
// with TTFT ttft(i) and 50 output tokens 10 ms apart after it.
func evenRequests(t0 time.Time, n int, gap time.Duration, ttft func(i int) time.Duration) []*sentRequest {
	reqs := make([]*sentRequest, 0, n)
	for i := range n {
		start := t0.Add(time.Duration(i) * gap)
		first := ttft(i)
		e2e := first + 500*time.Millisecond
		reqs = append(reqs, &sentRequest{sent: start, done: start.Add(e2e), res: Result{
			Start: start, TTFT: first, E2E: e2e, OutputTokens: 51, PromptTokens: 10, Request: Request{PromptTokens: 10, MaxTokens: 51}}})
	}
	return reqs
}

// TestATrialIsJudgedAtItsShareOfTheThresholds: a trial whose windowed p99
// TTFT sits at 95% of the threshold keeps the SLO judged at the threshold
// itself, and breaks it judged at 90% of it, saying so, while its goodput
// still counts every request under the threshold as good.
func TestATrialIsJudgedAtItsShareOfTheThresholds(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	// 300 requests, one every 100 ms, every fifth with a TTFT of 0.95 s.
	reqs := evenRequests(t0, 300, 100*time.Millisecond, func(i int) time.Duration {
		if i%5 == 0 {
			return 950 * time.Millisecond
		}
		return 100 * time.Millisecond
	})
	slo := knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(50 * time.Millisecond), Quantile: 0.99}
	from, to := t0.Add(15*time.Second), t0.Add(25*time.Second)
	for _, tc := range []struct {
		share float64
		kept  bool
	}{{0, true}, {1, true}, {0.9, false}} {
		tr := Trial{Steady: to.Sub(from)}
		judgeTrial(&tr, reqs, TrialConfig{SLO: slo, Tick: time.Second, SLOWindow: 10 * time.Second, ThresholdShare: tc.share}, from, to)
		if tr.Kept != tc.kept {
			t.Errorf("share %g: kept %v (%q), want %v", tc.share, tr.Kept, tr.Breach, tc.kept)
		}
		if !tc.kept && (!strings.Contains(tr.Breach, "p99 TTFT 950ms > 900ms") || !strings.Contains(tr.Breach, "judged at 90% of the SLO's thresholds")) {
			t.Errorf("share %g: breach %q, want the TTFT over 900ms, judged at 90%% of the thresholds", tc.share, tr.Breach)
		}
		if tr.Point.GoodputTokensPerSecond != tr.Point.OutputTokensPerSecond {
			t.Errorf("share %g: goodput %g of %g tok/s, want every request good against the SLO itself", tc.share,
				tr.Point.GoodputTokensPerSecond, tr.Point.OutputTokensPerSecond)
		}
	}
}

// TestATrialStoppedAtABreachOnItsFirstTickSaysWhatBroke: StopAtBreach
// ends a trial whose very first tick breaks the SLO with a steady part of
// no length; its verdict names the breach, not a steady part that "never
// started".
func TestATrialStoppedAtABreachOnItsFirstTickSaysWhatBroke(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	reqs := evenRequests(t0, 200, 50*time.Millisecond, func(int) time.Duration { return 2 * time.Second })
	slo := knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(50 * time.Millisecond), Quantile: 0.99}
	at := t0.Add(15 * time.Second)
	tr := Trial{StoppedAtBreach: true}
	judgeTrial(&tr, reqs, TrialConfig{SLO: slo, Tick: time.Second, SLOWindow: 10 * time.Second}, at, at)
	if tr.Kept || !strings.Contains(tr.Breach, "p99 TTFT") || !strings.Contains(tr.Breach, "at 0s into the steady part") {
		t.Errorf("kept %v, breach %q: want the TTFT p99 broken at the steady part's first tick", tr.Kept, tr.Breach)
	}
}

// TestTheOutstandingCapEndsATrialAndItsRequestsAreCancelled drives a
// server that never answers: the cap is reached after exactly cap
// arrivals, the trial ends long before its steady part, as not kept, and
// every request is cancelled (the server sees its context end; Close
// would hang otherwise).
func TestTheOutstandingCapEndsATrialAndItsRequestsAreCancelled(t *testing.T) {
	var open, ended atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The body read to its end, the server watches the connection and
		// ends the request's context when the client hangs up.
		_, _ = io.Copy(io.Discard, r.Body)
		open.Add(1)
		<-r.Context().Done()
		ended.Add(1)
	}))
	defer srv.Close()
	var drawn int
	start := time.Now()
	tr, err := RunTrial(context.Background(), &Client{BaseURL: srv.URL + "/v1", Model: "m", Stream: true, HTTP: NewHTTPClient(8)}, TrialConfig{
		Rate: 40, Warmup: time.Second, Steady: 30 * time.Second, Tick: time.Second, SLOWindow: time.Second,
		MaxOutstanding: 5, Seed: 7, SLO: knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(time.Second), Quantile: 0.99},
		Next: func() Request { drawn++; return Request{PromptTokens: 4, MaxTokens: 4} },
	})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the capped trial took %s", took)
	}
	if !tr.Capped || tr.Kept || tr.Sent != 5 || drawn != 5 || !strings.Contains(tr.Breach, "5 requests outstanding (the cap)") {
		t.Errorf("capped %v, kept %v, sent %d, drawn %d, breach %q", tr.Capped, tr.Kept, tr.Sent, drawn, tr.Breach)
	}
	// Close waits for the handlers: every request that reached one (the
	// last may have been cancelled on the way) must have ended.
	srv.Close()
	if open.Load() < 1 || open.Load() > 5 || ended.Load() != open.Load() {
		t.Errorf("the server saw %d requests, %d of them ended", open.Load(), ended.Load())
	}
}

func TestATrialRejectsBadSettings(t *testing.T) {
	next := func() Request { return Request{} }
	good := TrialConfig{Rate: 1, Steady: time.Second, Tick: time.Second, SLOWindow: time.Second, MaxOutstanding: 1, Next: next}
	for _, tc := range []struct {
		name   string
		modify func(*TrialConfig)
		want   string
	}{
		{"a zero rate", func(c *TrialConfig) { c.Rate = 0 }, "the arrival rate must be > 0"},
		{"no steady part", func(c *TrialConfig) { c.Steady = 0 }, "must be > 0"},
		{"a cap of 0", func(c *TrialConfig) { c.MaxOutstanding = 0 }, "the outstanding cap must be ≥ 1"},
		{"a threshold share over 1", func(c *TrialConfig) { c.ThresholdShare = 1.5 }, "the threshold share must be in (0, 1], got 1.5"},
		{"a negative runaway growth", func(c *TrialConfig) { c.Runaway.Growth = -0.5 }, "runaway test: the growth, requests and settling must be finite and ≥ 0, got -0.5, 0 and 0"},
		{"a runaway floor that is not a number", func(c *TrialConfig) { c.Runaway = measure.Runaway{Growth: 0.6, Requests: math.NaN()} }, "got 0.6, NaN and 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.modify(&cfg)
			if _, err := RunTrial(context.Background(), &Client{}, cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestATrialStopsAtItsFirstBreachedTick drives a server whose every first
// token comes 30 ms late against a 10 ms TTFT SLO: with StopAtBreach the
// trial ends at the first tick with a full window, long before its steady
// part would, and says where it broke.
func TestATrialStopsAtItsFirstBreachedTick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a trial of a few seconds")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(30 * time.Millisecond)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\ndata: %s\n\ndata: %s\n\ndata: [DONE]\n\n", textChunk, textChunk, usageChunk)
	}))
	defer srv.Close()
	start := time.Now()
	tr, err := RunTrial(context.Background(), &Client{BaseURL: srv.URL + "/v1", Model: "m", Stream: true, HTTP: NewHTTPClient(64)}, TrialConfig{
		Rate: 100, Warmup: 500 * time.Millisecond, Steady: 60 * time.Second, Tick: 200 * time.Millisecond, SLOWindow: time.Second,
		MaxOutstanding: 50, Seed: 3, StopAtBreach: true,
		SLO:  knee.SLO{TTFT: knee.Duration(10 * time.Millisecond), TPOT: knee.Duration(time.Second), Quantile: 0.99},
		Next: func() Request { return Request{PromptTokens: 4, MaxTokens: 3} },
	})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if !tr.StoppedAtBreach || tr.Kept || !strings.Contains(tr.Breach, "p99 TTFT") || took > 20*time.Second {
		t.Errorf("stopped at breach %v, kept %v, breach %q, took %s: want a stop at the first breached tick", tr.StoppedAtBreach, tr.Kept, tr.Breach, took)
	}
	t.Logf("stopped after %s (steady %s of 60s): %s", took.Round(time.Millisecond), tr.Steady.Round(time.Millisecond), tr.Breach)
}

func TestRequestsCutOffBeforeTheirFirstTokenCountAgainstTheTTFTSLO(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var reqs []*sentRequest
	// 400 requests, one every 100 ms, each served in 200 ms until the
	// replica stops answering at 25 s: the 150 sent after then are still
	// waiting for their first token when the trial ends at 40 s.
	for i := range 400 {
		start := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		if start.Before(t0.Add(25 * time.Second)) {
			reqs = append(reqs, &sentRequest{sent: start, done: start.Add(200 * time.Millisecond), res: Result{
				Start: start, TTFT: 100 * time.Millisecond, E2E: 200 * time.Millisecond, OutputTokens: 11, PromptTokens: 10,
				Request: Request{PromptTokens: 10, MaxTokens: 11}}})
			continue
		}
		reqs = append(reqs, &sentRequest{sent: start, done: t0.Add(40 * time.Second), cancelled: true,
			res: Result{Start: start, Err: context.Canceled, Request: Request{PromptTokens: 10, MaxTokens: 11}}})
	}
	slo := knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(50 * time.Millisecond), Quantile: 0.99}
	from, to := t0.Add(15*time.Second), t0.Add(40*time.Second)
	tr := Trial{Steady: to.Sub(from)}
	judgeTrial(&tr, reqs, TrialConfig{SLO: slo, Tick: time.Second, SLOWindow: 10 * time.Second}, from, to)
	// The first stuck request (sent at 25 s) is a known miss from 26 s; the
	// window's p99 crosses 1 s once two of them are in it: at the 27 s tick.
	// Judged by first tokens alone the trial would have kept the SLO.
	if tr.Kept || !strings.Contains(tr.Breach, "p99 TTFT") || !strings.Contains(tr.Breach, "at 12s into the steady part") {
		t.Errorf("kept %v, breach %q: want the TTFT p99 broken 12 s into the steady part by the requests stuck in the queue", tr.Kept, tr.Breach)
	}
}

// growingRequests are requests sent every gap from t0 that meet the SLO
// with room to spare (TTFT 100 ms, 50 tokens 10 ms apart), each taking
// life(i) from send to done: a lifetime that grows with i is a queue that
// grows.
func growingRequests(t0 time.Time, n int, gap time.Duration, life func(i int) time.Duration) []*sentRequest {
	reqs := evenRequests(t0, n, gap, func(int) time.Duration { return 100 * time.Millisecond })
	for i, r := range reqs {
		// The tokens fill the lifetime 10 ms apart: the TPOT stays 10 ms.
		l := life(i)
		tokens := int((l-r.res.TTFT)/(10*time.Millisecond)) + 1
		r.done = r.sent.Add(l)
		r.res.E2E, r.res.OutputTokens, r.res.Request.MaxTokens = l, tokens, tokens
	}
	return reqs
}

// TestATrialWhoseQueueRanAwayIsNotKept: a trial whose every window meets
// the SLO but whose requests in flight keep climbing (each request taking
// longer than the last, as a queue that does not drain makes them) is not
// kept under the sweep's runaway test, and says how far in flight grew; the
// same trial with a steady queue is kept, and so is the growing one with
// the test off.
func TestATrialWhoseQueueRanAwayIsNotKept(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	slo := knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(50 * time.Millisecond), Quantile: 0.99}
	from, to := t0.Add(30*time.Second), t0.Add(60*time.Second)
	// 10 requests/s. Steady: 1 s each, 10 in flight throughout. Growing:
	// from the steady part on, each request takes 200 ms longer per second
	// sent later, so in flight climbs from 16.7 over the first third
	// of the steady part to 50 over its last.
	steady := growingRequests(t0, 700, 100*time.Millisecond, func(int) time.Duration { return time.Second })
	growing := growingRequests(t0, 700, 100*time.Millisecond, func(i int) time.Duration {
		late := max(0, float64(i)/10-30)
		return time.Second + time.Duration(late*0.2*float64(time.Second))
	})
	for _, tc := range []struct {
		name    string
		reqs    []*sentRequest
		runaway measure.Runaway
		kept    bool
	}{
		{"a steady queue", steady, measure.DefaultRunaway, true},
		{"a queue that ran away", growing, measure.DefaultRunaway, false},
		{"a queue that ran away, the test off", growing, measure.Runaway{}, true},
		{"a queue that ran away, within a looser limit", growing, measure.Runaway{Growth: 3, Requests: 3}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := Trial{Steady: to.Sub(from)}
			judgeTrial(&tr, tc.reqs, TrialConfig{SLO: slo, Warmup: from.Sub(t0), Tick: time.Second, SLOWindow: 10 * time.Second, Runaway: tc.runaway}, from, to)
			if tr.Judged == 0 {
				t.Fatalf("no tick judged: the windows must hold enough requests for the test to be about the queue")
			}
			t.Logf("in flight %.1f → %.1f: %q", tr.InFlightThirds[0], tr.InFlightThirds[1], tr.Breach)
			if tr.Kept != tc.kept {
				t.Errorf("kept %v (%q), want %v; in flight %.1f → %.1f", tr.Kept, tr.Breach, tc.kept, tr.InFlightThirds[0], tr.InFlightThirds[1])
			}
			if !tc.kept && !strings.Contains(tr.Breach, "requests in flight grew from 1") {
				t.Errorf("breach %q, want it to say how far in flight grew", tr.Breach)
			}
		})
	}
	// The thirds are the exact integrals: 10 in flight throughout.
	tr := Trial{Steady: to.Sub(from)}
	judgeTrial(&tr, steady, TrialConfig{SLO: slo, Tick: time.Second, SLOWindow: 10 * time.Second}, from, to)
	if math.Abs(tr.InFlightThirds[0]-10) > 1e-9 || math.Abs(tr.InFlightThirds[1]-10) > 1e-9 {
		t.Errorf("in flight over the thirds %v, want 10 and 10", tr.InFlightThirds)
	}
}

// TestAQueueStillFillingIsNotARunaway: requests of five minutes (a
// reasoning model's long outputs) at a rate the replica serves, after a
// one-minute warm-up: in flight is still climbing toward its level through
// the steady part, more than twice as many over its last third as its
// first. The
// runaway test is not judged there (the warm-up was not twice a request's
// time in flight), so the trial is kept; judged regardless, it would not
// be.
func TestAQueueStillFillingIsNotARunaway(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	slo := knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(50 * time.Millisecond), Quantile: 0.99}
	from, to := t0.Add(time.Minute), t0.Add(6*time.Minute)
	// Two requests a second for 6 minutes, each in flight for 5 minutes:
	// the first complete as the steady part ends, enough to judge it.
	reqs := growingRequests(t0, 720, 500*time.Millisecond, func(int) time.Duration { return 5 * time.Minute })
	for _, tc := range []struct {
		name    string
		runaway measure.Runaway
		kept    bool
	}{
		{"the sweep's test", measure.DefaultRunaway, true},
		{"judged however short the warm-up", measure.Runaway{Growth: 0.6, Requests: 3}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := Trial{Steady: to.Sub(from)}
			judgeTrial(&tr, reqs, TrialConfig{SLO: slo, Warmup: from.Sub(t0), Tick: 5 * time.Second, SLOWindow: 2 * time.Minute, Runaway: tc.runaway}, from, to)
			t.Logf("in flight %.1f → %.1f, %d of %d ticks judged: %q", tr.InFlightThirds[0], tr.InFlightThirds[1], tr.Judged, tr.Ticks, tr.Breach)
			if g := tr.InFlightThirds; !(g[1] > 2*g[0]) || tr.Judged == 0 {
				t.Fatalf("in flight over the thirds %v, %d ticks judged: the case must be a filling queue whose SLO was judged", g, tr.Judged)
			}
			if tr.Kept != tc.kept {
				t.Errorf("kept %v (%q), want %v", tr.Kept, tr.Breach, tc.kept)
			}
		})
	}
}
