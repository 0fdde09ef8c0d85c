package probe

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Target is one replica to probe.
type Target struct {
	Replica string // the replica label; unique
	// Model is sent as "model" and is the model label; when empty, the
	// model the watcher last saw (ReplicaState.Model) is used.
	Model string
	// Namespace, Pod and Labels are the replica's identity and extra
	// labels, put on its probe series as on kneewatch's other series.
	Namespace, Pod string
	Labels         map[string]string
	// BaseURL is the replica's OpenAI-compatible base URL, e.g.
	// http://10.0.0.7:8000/v1.
	BaseURL string
	// KneeOutputTokensPerSecond is the output throughput at the replica's
	// knee: the probe budget is a share of it. Unknown (≤ 0 or NaN) means no
	// budget, so every probe is skipped with reason budget.
	KneeOutputTokensPerSecond float64
	// SLOTTFT and SLOTPOT are the replica's SLO thresholds (0 when none):
	// edges of the probe histograms and what probe attainment counts.
	SLOTTFT, SLOTPOT time.Duration
}

func (t Target) kneeTPS() (float64, bool) {
	v := t.KneeOutputTokensPerSecond
	return v, v > 0 && !math.IsInf(v, 0) // NaN fails v > 0
}

// record is one sent probe, kept for the window's summary and the budget.
type record struct {
	id       uint64
	start    time.Time
	tokens   int // max_tokens while in flight (the budget's charge), then the tokens received
	prompt   int // the prompt tokens the server counted (usage); 0 when unknown
	finished bool
	end      time.Time
	ok       bool
	class    Class   // the failure class; empty on success
	ttft     float64 // seconds; NaN when unknown
	tpot     float64 // seconds; NaN when unknown
}

// replicaState is everything the runner keeps for one replica. The loop
// goroutine writes it, Collect and Summary read it; mu guards all but name
// (fixed) and cancel (guarded by the Runner's mu).
type replicaState struct {
	name string // the replica; never changes

	mu     sync.Mutex
	target Target
	model  string // the model label
	// modelKnown is false until the model label is settled: the target
	// names it, or the watcher has seen the replica. Until then the
	// replica exports nothing, so no series starts with model="" and churns
	// to the real model after the first probe.
	modelKnown bool
	ttft       *histogram
	tpot       *histogram
	success    uint64
	failures   map[Class]uint64
	skipped    map[Reason]uint64
	last       time.Time // when the last probe finished
	records    []record  // oldest first, trimmed to the retention span
	failing    bool      // the last finished probe failed (for logging transitions)
	nextID     uint64    // of the next record

	cancel func() // stops the loop; nil while not running
}

func newReplicaState(t Target) *replicaState {
	s := &replicaState{name: t.Replica, failures: map[Class]uint64{}, skipped: map[Reason]uint64{}}
	s.setTarget(t)
	return s
}

// setTarget updates the target; new SLO thresholds restart the histograms
// with the new edges (a counter reset to Prometheus), since edges cannot
// change under a running series.
func (s *replicaState) setTarget(t Target) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ttft == nil || t.SLOTTFT != s.target.SLOTTFT {
		s.ttft = newHistogram(bucketsWith(ttftBuckets, t.SLOTTFT.Seconds()))
	}
	if s.tpot == nil || t.SLOTPOT != s.target.SLOTPOT {
		s.tpot = newHistogram(bucketsWith(tpotBuckets, t.SLOTPOT.Seconds()))
	}
	s.target = t
	if t.Model != "" || s.model == "" {
		s.model = t.Model
	}
	s.modelKnown = s.modelKnown || t.Model != ""
}

// settleModel returns the model a probe is about to be sent with and
// settles the label on it: without a watcher that knows the replica, the
// model the probe asked for is the best there is.
func (s *replicaState) settleModel() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modelKnown = true
	return s.model
}

func (s *replicaState) snapshotTarget() Target {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.target
}

func (s *replicaState) skip(r Reason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skipped[r]++
}

// setModel takes the model the watcher saw when the target names none;
// once the watcher has seen the replica the label is settled, even as ""
// for an engine that names no model.
func (s *replicaState) setModel(seen string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.target.Model == "" && seen != "" {
		s.model = seen
	}
	s.modelKnown = true
	return s.model
}

// finish records a probe's result in its reserved record, the histograms
// and the counters. It returns whether the replica's probes went from
// passing to failing or back.
func (s *replicaState) finish(id uint64, res Result, now time.Time) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := res.OK()
	ttft, tpot := math.NaN(), math.NaN()
	if ok {
		s.success++
		if res.TTFT > 0 {
			ttft = res.TTFT.Seconds()
			s.ttft.observe(ttft)
		}
		if res.TPOT > 0 {
			tpot = res.TPOT.Seconds()
			s.tpot.observe(tpot)
		}
	} else {
		s.failures[res.Class]++
	}
	s.last = now
	for i := len(s.records) - 1; i >= 0; i-- {
		if r := &s.records[i]; r.id == id {
			*r = record{id: id, start: r.start, tokens: res.OutputTokens, prompt: res.PromptTokens, finished: true, end: now, ok: ok,
				class: res.Class, ttft: ttft, tpot: tpot}
			break
		}
	}
	changed = s.failing == ok // was failing and now ok, or the reverse
	s.failing = !ok
	return changed
}

// drop forgets a probe cancelled by shutdown: it measured nothing.
func (s *replicaState) drop(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = slices.DeleteFunc(s.records, func(r record) bool { return r.id == id })
}
