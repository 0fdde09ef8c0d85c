package watch

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/probe"
)

// Target is one replica to watch, from the static config or from discovery.
type Target struct {
	Replica string // unique name; the `replica` label
	// Namespace and Pod are the served replica's Kubernetes identity (from
	// discovery, or the static config); empty when it has none. They travel
	// as the `namespace` and `pod` labels so a page routes to the team that
	// owns the model, not to kneewatch's own namespace.
	Namespace string
	Pod       string
	// Labels are extra labels put on every series about the replica (the
	// static config's `labels`); never one of kneewatch's own label names.
	Labels     map[string]string
	Model      string // served model; empty means the engine's single model
	Engine     string // adapter name; empty means auto-detect
	MetricsURL string
	Client     *http.Client // nil means http.DefaultClient
	DCGM       *DCGMTarget  // nil when the replica's GPU is not watched
	// ProfileName and Profile are the replica's knee; a nil Profile makes
	// every evaluation not ok with reason no_profile.
	ProfileName string
	Profile     *knee.Profile
	OpenAIURL   string // the replica's OpenAI-compatible base URL, for probes
	// SLO is what attainment is measured against when there is no
	// profile (with a profile, the profile's SLO is used).
	SLO knee.SLO
}

// DCGMTarget says where a replica's GPU metrics are and which GPUs are its.
type DCGMTarget struct {
	URL    string
	Client *http.Client
	// Selectors pick the replica's GPUs: a GPU matching any is the
	// replica's (one per UUID for tensor-parallel replicas, or pod and
	// namespace as dcgm-exporter's Kubernetes mapping labels them).
	Selectors []collector.GPUSelector
}

// selectGPUs returns the GPUs of snap matching any selector, each once.
func (d *DCGMTarget) selectGPUs(snap collector.DCGMSnapshot) []collector.GPUSnapshot {
	var out []collector.GPUSnapshot
	seen := map[string]bool{}
	for _, sel := range d.Selectors {
		for _, g := range snap.Select(sel) {
			key := g.Labels.Hostname + "/" + g.Labels.GPU + "/" + g.Labels.UUID
			if !seen[key] {
				seen[key] = true
				out = append(out, g)
			}
		}
	}
	return out
}

// WatcherOptions configure a Watcher.
type WatcherOptions struct {
	Interval       time.Duration // between evaluation rounds
	Window         time.Duration // of the rates, means and quantiles
	Limits         collector.ScrapeLimits
	TargetHeadroom float64 // for fleet sizing, 0..1
	Knee           knee.Options
	// Parallelism bounds concurrent engine scrapes in EvaluateOnce
	// (default 16). Run gives every target its own turns instead; what
	// bounds its parallel scrapes is Limits' memory budget.
	Parallelism int
	Logger      *slog.Logger
	// Now is the clock (default time.Now); tests inject one.
	Now func() time.Time
	// Probes, when set, reports each replica's synthetic probes: a replica
	// whose probes all fail is not evaluated as healthy with headroom,
	// whatever its metrics say.
	Probes probe.Summaries
}

// Watcher scrapes every target, keeps a window per replica, evaluates
// headroom, and publishes an immutable Round that the exporter reads.
//
// Under Run, every replica and every DCGM endpoint is scraped on its own
// cadence, staggered over the interval (replicas by one schedule, in
// slots, see schedule.go; DCGM endpoints each by its own loop): a slow or
// hung source delays only itself, never the other replicas' evaluations. Each replica's evaluation is stamped
// with its own time; a Round gathers the latest evaluation of every
// replica. EvaluateOnce and Replay evaluate every replica once, together,
// for tests and virtual-time benches.
type Watcher struct {
	opts WatcherOptions

	mu      sync.Mutex // guards targets, dcgm, runCtx and opts.Limits
	targets map[string]*replicaState
	// sorted is targets by replica name, built on first use after
	// SetTargets; callers share it and never modify it.
	sorted []*replicaState
	dcgm   map[string]*dcgmSource // by URL, shared by the replicas of a node
	// runCtx is Run's context while it runs (nil otherwise): SetTargets
	// schedules new targets under it. schedule gives every replica its
	// turns while it runs.
	runCtx   context.Context
	schedule *schedule
	// dirty wakes the publisher after a replica evaluation.
	dirty chan struct{}
	// logs rate-limits repeated scrape failure and problem logs.
	logs *logLimiter
	// edgeLog is the SLO bucket-edge warnings logged for any replica, so
	// a fleet with one engine and SLO logs them once (see EdgeLog).
	edgeLog collector.EdgeLog

	latest      atomic.Pointer[Round]
	evaluations atomic.Uint64
}

type replicaState struct {
	// mu serializes evaluations of the replica (its turns, EvaluateOnce,
	// Replay) and SetTargets' update of target: one owner of the window at
	// a time.
	mu       sync.Mutex
	target   Target
	window   *collector.Window
	counters collector.SLOCounters
	// mix holds the replica's finished requests and tokens over the last
	// minutes, for a mix the window holds too few requests to judge.
	mix collector.MixHistory
	// tails holds the replica's prompt-length buckets over the same
	// minutes, for a prompt tail read over more requests than the window's.
	tails collector.PromptTailHistory
	// model is the last model the engine reported, so a failed scrape
	// keeps the replica's series under the same labels.
	model string
	// problems counts the scrape problems seen, by source and kind.
	problems map[ProblemKey]float64
	// lastDCGM is the start of the last DCGM scrape whose problems were
	// counted.
	lastDCGM time.Time
	// footprint is what the replica's engine scrapes charge to the scrape
	// memory budget, so each waits for it at once.
	footprint collector.Footprint
	// last is the replica's latest evaluation, read by the publisher.
	last atomic.Pointer[ReplicaEval]
	// stop ends the replica's turns (nil when it has none); guarded by
	// Watcher.mu.
	stop context.CancelFunc
	// edges logs SLO thresholds that fall between the scraped bucket edges.
	edges collector.EdgeWarner
	// engine is the adapter of the last good scrape, logged when it changes.
	engine string
	// tailCheckedFor is the profile a good scrape was last checked against
	// for the prompt-length histogram (see noteTail): a reloaded profile
	// is checked again, and an engine change clears it.
	tailCheckedFor *knee.Profile
}

// ProblemKey counts scrape problems by source ("engine", "dcgm") and kind
// (one of the Problem* constants).
type ProblemKey struct{ Source, Kind string }

// Round is the result of one evaluation round. It is never modified after
// it is published.
type Round struct {
	At          time.Time
	Replicas    []ReplicaEval // sorted by replica
	Fleet       map[string]knee.Fleet
	Evaluations uint64
}

// ReplicaEval is one replica's state after its latest evaluation.
type ReplicaEval struct {
	Replica, Model, Profile string
	// Namespace, Pod and Labels are the target's, copied so a scrape of
	// this round labels its series as the round saw the target.
	Namespace, Pod string
	Labels         map[string]string
	// At is when the replica was evaluated (its engine scrape's start, or
	// the clock when the scrape failed): each replica has its own time.
	At time.Time
	// Engine is the adapter that read the replica's metrics: configured,
	// or detected from the metric names; kept from the last good scrape.
	Engine string

	EngineUp    bool
	EngineError string
	// EngineUnknown is true when the engine's scrape got no room in the
	// scrape memory budget within its timeout: it was not made, so whether
	// the engine is up is unknown, and kneewatch_target_up is not exported
	// (EngineError says why).
	EngineUnknown  bool
	EngineDuration time.Duration

	DCGMConfigured bool
	// DCGMPending is true until the replica's DCGM endpoint has been
	// scraped once: its up-ness is not known yet, so it is not exported.
	DCGMPending bool
	DCGMUp      bool
	DCGMError   string
	// DCGMUnknown is EngineUnknown for the DCGM endpoint's scrape.
	DCGMUnknown  bool
	DCGMDuration time.Duration

	// Problems counts, since the replica was added, what its scrapes
	// carried that could not be used, by source and kind. Never modified
	// after the evaluation is stored.
	Problems map[ProblemKey]float64

	Observation knee.Observation
	Result      knee.Result
	SLO         *knee.SLO  // nil without a profile
	Knee        *knee.Knee // nil without a profile
	// Curve is the profile's measured points, for the knee panel; shared
	// with the profile and never modified. Nil without a profile.
	Curve []knee.Point

	// Cumulative request counts for burn-rate rules, and the TTFT and TPOT
	// histograms' accumulated counts and sums; valid when HasCounters.
	HasCounters      bool
	RequestsTotal    float64
	GoodTTFTRequests float64
	GoodTPOTRequests float64
	TTFTSum          float64
	TPOTCount        float64
	TPOTSum          float64
}

// Reasons a replica's evaluation is not ok that the watcher adds to the
// knee package's own.
const (
	// ReasonEngineDown marks a replica whose engine metrics could not be
	// scraped this round: its headroom is unknown, not stale.
	ReasonEngineDown = "engine_down"
	// ReasonProbesFailing marks a replica whose synthetic probes all failed
	// over the window: it serves metrics but not tokens.
	ReasonProbesFailing = "probes_failing"
	// ReasonUnusableSignal marks a replica whose latest scrape carried a
	// signal a headroom dimension reads (load, throughput, KV cache) that
	// could not be used (NaN, ±Inf, negative counter, duplicate series…):
	// a headroom from the remaining dimensions would look confident while
	// missing the one that may be the limit.
	ReasonUnusableSignal = "unusable_signal"
	// ReasonMemoryBudget marks a replica whose engine scrape got no room
	// in the scrape memory budget within its timeout (parallel scrapes of
	// large bodies held it): nothing was read, so its headroom is unknown,
	// but nothing says its engine is down.
	ReasonMemoryBudget = "scrape_memory_budget"
	// ReasonWarmingUp marks a replica whose window does not yet span
	// enough scrapes (at start, when it appears, or after its engine was
	// unreachable for a window) for rates and means that mean what they
	// say.
	ReasonWarmingUp = "warming_up"
)

// NewWatcher returns a Watcher with no targets.
func NewWatcher(opts WatcherOptions) *Watcher {
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Second
	}
	if opts.Window <= 0 {
		opts.Window = time.Minute
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = 16
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.Limits = opts.Limits.WithBudget()
	return &Watcher{
		opts: opts, targets: map[string]*replicaState{}, dcgm: map[string]*dcgmSource{},
		dirty: make(chan struct{}, 1), logs: newLogLimiter(opts.Logger, logRepeatEvery),
	}
}

// logRepeatEvery is how often an unchanged scrape failure or problem is
// logged again: a target down for an hour logs 60 lines, not 720.
const logRepeatEvery = time.Minute

// SetLimits replaces the scrape limits (a config reload); scrapes started
// afterwards use them. A memory budget of unchanged size is kept, so the
// scrapes in flight and those after a reload share one, not two.
func (w *Watcher) SetLimits(l collector.ScrapeLimits) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l.Budget == nil {
		l.Budget = w.opts.Limits.Budget // replaced by WithBudget if its size differs
	}
	w.opts.Limits = l.WithBudget()
}

// SetTargetHeadroom replaces the fleet sizing target (a config reload).
func (w *Watcher) SetTargetHeadroom(h float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.opts.TargetHeadroom = h
}

func (w *Watcher) limits() collector.ScrapeLimits {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.opts.Limits
}

// SetTargets replaces the watched replicas. A replica whose metrics URL is
// unchanged keeps its window (a reload that only changes its profile does
// not restart its rates); a replica that is gone is dropped, so its series
// disappear from the next round.
func (w *Watcher) SetTargets(targets []Target) error {
	next := make(map[string]*replicaState, len(targets))
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range targets {
		if t.Replica == "" {
			return fmt.Errorf("target with metrics URL %q has no replica name", t.MetricsURL)
		}
		if _, dup := next[t.Replica]; dup {
			return fmt.Errorf("replica %q appears twice", t.Replica)
		}
		if old, ok := w.targets[t.Replica]; ok && old.target.MetricsURL == t.MetricsURL {
			old.mu.Lock()
			old.target = t
			old.mu.Unlock()
			next[t.Replica] = old
			continue
		}
		win, err := collector.NewWindow(w.opts.Window, windowCapacity(w.opts.Window, w.opts.Interval))
		if err != nil {
			return err
		}
		next[t.Replica] = &replicaState{target: t, window: win, problems: map[ProblemKey]float64{}}
	}
	for name, old := range w.targets {
		if next[name] != old && old.stop != nil {
			old.stop()
			old.stop = nil
		}
	}
	w.targets = next
	w.sorted = nil
	w.syncDCGMLocked()
	if w.runCtx != nil {
		for _, s := range next {
			if s.stop == nil {
				w.startReplicaLocked(s)
			}
		}
	}
	w.signal()
	return nil
}

// windowCapacity holds every scrape of the window plus slack for jitter.
func windowCapacity(window, interval time.Duration) int {
	return int(window/interval) + 4
}

// Latest returns the last published round, or nil before the first.
func (w *Watcher) Latest() *Round { return w.latest.Load() }

// Ready reports whether a round has been published.
func (w *Watcher) Ready() bool { return w.latest.Load() != nil }

// Run scrapes and evaluates every replica on its own schedule, and
// publishes rounds, until ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.mu.Lock()
	w.runCtx = ctx
	w.schedule = newSchedule(w.opts.Interval, newWorkers(ctx), func(ctx context.Context, s *replicaState) {
		w.evaluateReplica(ctx, s, w.dcgmLatest)
		w.signal()
	})
	go w.schedule.loop(ctx)
	w.syncDCGMLocked()
	for _, s := range w.targets {
		w.startReplicaLocked(s)
	}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.runCtx, w.schedule = nil, nil
		for _, s := range w.targets {
			s.stop = nil
		}
		w.syncDCGMLocked()
		w.mu.Unlock()
	}()
	// Rounds are published at most every spacing, so a fleet of hundreds
	// of replicas does not rebuild a round for each replica's evaluation.
	// A round copies every replica's evaluation: at 1,000 replicas, 4
	// rounds a second cost more than their scrapes' parsing. Two seconds'
	// delay is little to a /metrics read every 15 s or more.
	spacing := min(w.opts.Interval/10, 2*time.Second)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.dirty:
		}
		w.publishLatest()
		if !sleep(ctx, spacing) {
			return nil
		}
	}
}

// signal wakes the publisher without blocking.
func (w *Watcher) signal() {
	select {
	case w.dirty <- struct{}{}:
	default:
	}
}

// stagger spreads replicas over the interval by a hash of their key, so
// the scrapes of a large fleet do not all start at once (the schedule
// rounds it to its slots), and a key keeps its phase across restarts.
func (w *Watcher) stagger(key string) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return time.Duration(h.Sum64() % uint64(w.opts.Interval))
}

// startReplicaLocked schedules s's turns under runCtx, the first after
// its stagger. w.mu must be held.
func (w *Watcher) startReplicaLocked(s *replicaState) {
	ctx, stop := context.WithCancel(w.runCtx)
	s.stop = stop
	w.schedule.add(ctx, s, time.Now().Add(w.stagger(s.target.Replica)))
}

// sleep waits d or until ctx ends, reporting whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// EvaluateOnce scrapes every target and its DCGM endpoint (DCGM alongside
// the engines, at most Parallelism engine scrapes in flight), evaluates
// each replica and publishes the round.
func (w *Watcher) EvaluateOnce(ctx context.Context) *Round {
	w.mu.Lock()
	states := w.sortedStatesLocked()
	urls := w.dcgmURLsLocked()
	sources := maps.Clone(w.dcgm)
	w.mu.Unlock()

	type pending struct {
		done chan struct{}
		res  dcgmResult
	}
	dcgm := make(map[string]*pending, len(urls))
	for url, client := range urls {
		p := &pending{done: make(chan struct{})}
		dcgm[url] = p
		var fp *collector.Footprint
		if src := sources[url]; src != nil {
			fp = &src.footprint
		}
		go func() {
			defer close(p.done)
			p.res = w.scrapeDCGMOnce(ctx, url, client, fp)
		}()
	}
	wait := func(url string) *dcgmResult {
		p, ok := dcgm[url]
		if !ok {
			return nil
		}
		<-p.done
		return &p.res
	}
	sem := make(chan struct{}, w.opts.Parallelism)
	var wg sync.WaitGroup
	for _, s := range states {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			w.evaluateReplica(ctx, s, wait)
		}()
	}
	wg.Wait()
	return w.publishLatest()
}

func (w *Watcher) sortedStatesLocked() []*replicaState {
	if w.sorted == nil {
		states := make([]*replicaState, 0, len(w.targets))
		for _, s := range w.targets {
			states = append(states, s)
		}
		sort.Slice(states, func(i, j int) bool { return states[i].target.Replica < states[j].target.Replica })
		w.sorted = states
	}
	return w.sorted
}

// publishLatest gathers every replica's latest evaluation into a round and
// publishes it. A replica not yet evaluated is left out until it is.
func (w *Watcher) publishLatest() *Round {
	w.mu.Lock()
	states := w.sortedStatesLocked()
	w.mu.Unlock()
	evals := make([]ReplicaEval, 0, len(states))
	for _, s := range states {
		if e := s.last.Load(); e != nil {
			evals = append(evals, *e)
		}
	}
	return w.publish(evals)
}

// publish summarizes the fleet and makes the round the latest.
func (w *Watcher) publish(evals []ReplicaEval) *Round {
	byModel := map[string][]knee.Result{}
	for _, e := range evals {
		if e.Model != "" {
			byModel[e.Model] = append(byModel[e.Model], e.Result)
		}
	}
	w.mu.Lock()
	target := w.opts.TargetHeadroom
	w.mu.Unlock()
	r := &Round{
		At:          w.opts.Now(),
		Replicas:    evals,
		Fleet:       knee.FleetSummary(byModel, target),
		Evaluations: w.evaluations.Add(1),
	}
	w.latest.Store(r)
	return r
}

// evaluateReplica scrapes s's engine, takes its DCGM result from dcgmOf,
// evaluates it and stores the evaluation as s's latest.
func (w *Watcher) evaluateReplica(ctx context.Context, s *replicaState, dcgmOf func(url string) *dcgmResult) {
	s.mu.Lock()
	t := s.target
	s.mu.Unlock()
	start := time.Now()
	snap, err := collector.NewScraper(t.Client, w.limits()).WithFootprint(&s.footprint).
		Scrape(ctx, t.MetricsURL, collector.Options{Engine: t.Engine, Model: t.Model})
	if ctx.Err() != nil {
		return // stopped (shutdown, or the target was removed): not a failure
	}
	out := scrapeOutcome{snap: snap, err: err, duration: time.Since(start), at: w.opts.Now()}
	if d := t.DCGM; d != nil {
		out.dcgm = dcgmOf(d.URL)
		if out.dcgm == nil {
			out.dcgm = &dcgmResult{pending: true}
		}
	}
	s.mu.Lock()
	e := w.assess(s, out)
	s.mu.Unlock()
	s.last.Store(&e)
}

// scrapeOutcome is what one round fetched for one replica.
type scrapeOutcome struct {
	snap     collector.Snapshot
	err      error
	duration time.Duration
	// at is when a failed scrape was evaluated (a successful one is
	// stamped with its snapshot's time).
	at   time.Time
	dcgm *dcgmResult // nil when the replica has no DCGM target
}

// assess folds one round's scrapes into the replica's window and evaluates
// it. It does no I/O, so tests can feed it a fixed sequence of snapshots.
// s.mu must be held (or s not shared).
func (w *Watcher) assess(s *replicaState, out scrapeOutcome) ReplicaEval {
	t := s.target
	e := ReplicaEval{Replica: t.Replica, Model: t.Model, Profile: t.ProfileName, Namespace: t.Namespace, Pod: t.Pod,
		Labels: t.Labels, EngineDuration: out.duration, At: out.at}
	switch {
	case t.Profile != nil:
		slo, k := t.Profile.SLO, t.Profile.Knee
		e.SLO, e.Knee = &slo, &k
		e.Curve = t.Profile.Points
	case t.SLO.TTFT > 0 && t.SLO.TPOT > 0:
		slo := t.SLO
		e.SLO = &slo
	}
	if out.err == nil && out.snap.Model != "" {
		s.model = collector.CapLabel(out.snap.Model)
	}
	if out.err == nil {
		s.noteEngine(w.opts.Logger, out.snap.Engine)
		s.noteTail(w.opts.Logger, out.snap)
	}
	e.Engine = s.engine
	if e.Model == "" {
		e.Model = s.model
	}
	if s.problems == nil {
		s.problems = map[ProblemKey]float64{}
	}

	var gpus []collector.GPUSnapshot
	if d := t.DCGM; d != nil && out.dcgm != nil {
		e.DCGMConfigured = true
		e.DCGMDuration = out.dcgm.duration
		switch {
		case out.dcgm.pending:
			e.DCGMPending = true
		case errors.Is(out.dcgm.err, collector.ErrMemoryBudget):
			e.DCGMError, e.DCGMUnknown = out.dcgm.err.Error(), true
			if at := out.dcgm.at; at.After(s.lastDCGM) {
				s.lastDCGM = at
				w.countProblems(s, "dcgm", []collector.Problem{budgetProblem(out.dcgm.err)})
			}
		case out.dcgm.err != nil:
			e.DCGMError = out.dcgm.err.Error()
		default:
			gpus = d.selectGPUs(out.dcgm.snap)
			if len(gpus) == 0 {
				e.DCGMError = "no GPU matches the replica's selector"
			} else {
				e.DCGMUp = true
			}
			// One DCGM scrape may serve several evaluations of the
			// replica: count its problems once.
			if at := out.dcgm.at; at.After(s.lastDCGM) {
				s.lastDCGM = at
				w.countProblems(s, "dcgm", out.dcgm.snap.Problems)
			}
		}
		if !e.DCGMUnknown {
			w.logs.failure(t.Replica+"/dcgm", "DCGM scrape failed", e.DCGMError, "replica", t.Replica)
		}
	}

	if errors.Is(out.err, collector.ErrMemoryBudget) {
		// Not the engine's doing: counted and logged as a problem of the
		// scrape, and the engine's own failure state is left as it was.
		e.EngineError, e.EngineUnknown = out.err.Error(), true
		w.countProblems(s, "engine", []collector.Problem{budgetProblem(out.err)})
		e.Observation = knee.NewObservation()
		e.Result = notOK(w.opts.Knee, ReasonMemoryBudget)
		return w.withCounters(e, s)
	}
	if out.err != nil {
		e.EngineError = out.err.Error()
		w.logs.failure(t.Replica+"/engine", "engine scrape failed", e.EngineError, "replica", t.Replica)
		e.Observation = knee.NewObservation()
		e.Result = knee.Evaluate(e.Observation, nil, w.opts.Knee)
		e.Result.Reason = ReasonEngineDown
		return w.withCounters(e, s)
	}
	w.logs.failure(t.Replica+"/engine", "engine scrape failed", "", "replica", t.Replica)
	e.EngineUp = true
	snap := out.snap
	e.At = snap.Time
	if snap.Model != "" && len(snap.Model) > collector.MaxLabelValueBytes {
		snap.Problems = append(snap.Problems, collector.Problem{Metric: "model label", Kind: collector.ProblemLabelTooLong,
			Reason: fmt.Sprintf("model label value of %d bytes exported as %q", len(snap.Model), collector.CapLabel(snap.Model))})
	}
	w.countProblems(s, "engine", snap.Problems)
	snap.AttachGPUs(gpus)
	if err := s.window.Add(snap); err != nil {
		w.opts.Logger.Warn("snapshot rejected", "replica", t.Replica, "err", err)
	}
	s.counters.Add(snap, e.SLO)
	s.mix.Add(snap)
	s.tails.Add(snap)
	s.edges.Check(w.opts.Logger, &w.edgeLog, t.Replica, snap, e.SLO)

	e.Observation = collector.Observe(s.window, snap.Time, e.SLO)
	if w.opts.Probes != nil {
		if pt, ok := w.opts.Probes.Traffic(t.Replica, snap.Time.Add(-s.window.Width()), snap.Time); ok {
			excludeProbeTraffic(&e.Observation, s.window, snap.Time, pt)
		}
	}
	widenMix(&e.Observation, &s.mix, w.opts.Probes, t.Replica, t.Profile)
	readSpanTail(&e.Observation, &s.tails)
	e.Result = knee.Evaluate(e.Observation, t.Profile, w.opts.Knee)
	unusable := ""
	switch p, bad := collector.UnusableDimension(snap); {
	case bad && t.Profile != nil:
		// Before knee's own reasons: a duplicated in-flight gauge leaves
		// the load unknown, and "unusable" says why.
		unusable = p.String()
		e.Result = notOK(w.opts.Knee, ReasonUnusableSignal)
	case !e.Result.OK:
	case !s.window.WarmedUp(snap.Time):
		e.Result = notOK(w.opts.Knee, ReasonWarmingUp)
	}
	w.logs.failure(t.Replica+"/unusable", "headroom withheld: a dimension's signal is unusable", unusable, "replica", t.Replica)
	if e.Result.OK && e.Knee != nil {
		// The knee compared with, moved with the mix when the profile has a
		// mix model: the one the on-call should see beside the headroom.
		k := e.Result.Knee
		e.Knee = &k
	}
	if w.opts.Probes != nil {
		if ps, ok := w.opts.Probes.Summary(t.Replica); ok && ps.AllFailing {
			e.Result = notOK(w.opts.Knee, ReasonProbesFailing)
		}
	}
	return w.withCounters(e, s)
}

// budgetProblem is a scrape refused for the memory budget, as a problem.
func budgetProblem(err error) collector.Problem {
	return collector.Problem{Metric: "whole scrape", Kind: collector.ProblemMemoryBudget, Reason: err.Error()}
}

// notOK is a result with every value unknown and the given reason.
func notOK(opts knee.Options, reason string) knee.Result {
	r := knee.Evaluate(knee.NewObservation(), nil, opts)
	r.Reason = reason
	return r
}

// countProblems adds a scrape's problems to the replica's counters and
// logs them, each kind at most once per logRepeatEvery per replica.
func (w *Watcher) countProblems(s *replicaState, source string, problems []collector.Problem) {
	seen := map[string]bool{}
	for _, p := range problems {
		kind := p.Kind
		if kind == "" {
			kind = collector.ProblemInvalidLabel
		}
		s.problems[ProblemKey{Source: source, Kind: kind}]++
		if !seen[kind] {
			seen[kind] = true
			w.logs.every(s.target.Replica+"/"+source+"/"+kind, "scrape problem", "replica", s.target.Replica,
				"source", source, "problem", kind, "detail", capText(p.String()))
		}
	}
}

// noteEngine remembers the engine a scrape was read with, logging it the
// first time and whenever it changes (a replica redeployed on another
// engine): the on-call should know which metric names a headroom came from.
func (s *replicaState) noteEngine(logger *slog.Logger, engine string) {
	if engine == "" || engine == s.engine {
		return
	}
	if s.engine == "" {
		logger.Info("engine detected", "replica", s.target.Replica, "engine", engine, "configured", s.target.Engine != "")
	} else {
		logger.Warn("engine changed", "replica", s.target.Replica, "from", s.engine, "to", engine)
	}
	s.engine = engine
	s.tailCheckedFor = nil
}

// noteTail warns, once per replica, engine and profile, when the replica's profile
// records its prompt tail (workload.p999PromptTokens) but the engine's
// scrape carries no prompt-length histogram to compare it with. The knee
// then moves with the mean prompt only, and a mix that turns a few percent
// long-context (its mean barely moving) goes unseen until latency shows
// it. vLLM and TGI export the histogram by default; SGLang only when
// started with --collect-tokens-histogram.
func (s *replicaState) noteTail(logger *slog.Logger, snap collector.Snapshot) {
	p := s.target.Profile
	if p == nil || p == s.tailCheckedFor || !(p.Workload.P999PromptTokens > 0) {
		return
	}
	s.tailCheckedFor = p
	if _, ok := snap.Histogram(collector.SignalPromptLength); ok {
		return
	}
	hint := collector.AbsentHint(snap.Engine, collector.SignalPromptLength)
	if hint == "" {
		hint = "the engine exports none"
	}
	logger.Warn("no prompt-length histogram: the knee moves with the mean prompt only, not with a long-prompt tail",
		"replica", s.target.Replica, "engine", snap.Engine, "hint", hint)
}

func (w *Watcher) withCounters(e ReplicaEval, s *replicaState) ReplicaEval {
	if len(s.problems) > 0 {
		e.Problems = maps.Clone(s.problems)
	}
	if e.SLO != nil && s.counters.Seen {
		e.HasCounters = true
		e.RequestsTotal = s.counters.Total
		e.GoodTTFTRequests = s.counters.GoodTTFT
		e.GoodTPOTRequests = s.counters.GoodTPOT
		e.TTFTSum, e.TPOTCount, e.TPOTSum = s.counters.SumTTFT, s.counters.CountTPOT, s.counters.SumTPOT
	}
	return e
}

// Replicas returns the names of the watched replicas, sorted.
func (w *Watcher) Replicas() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	names := make([]string, 0, len(w.targets))
	for n := range w.targets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
