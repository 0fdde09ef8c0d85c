package collector

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/probe"
)

// Target is one replica to watch, from the static config or from discovery.
type Target struct {
	Replica    string // unique name; the `replica` label
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
	Selectors []GPUSelector
}

// selectGPUs returns the GPUs of snap matching any selector, each once.
func (d *DCGMTarget) selectGPUs(snap DCGMSnapshot) []GPUSnapshot {
	var out []GPUSnapshot
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
	Limits         ScrapeLimits
	TargetHeadroom float64 // for fleet sizing, 0..1
	Knee           knee.Options
	// Parallelism bounds concurrent scrapes per round (default 16).
	Parallelism int
	Logger      *slog.Logger
	// Now is the clock (default time.Now); tests inject one.
	Now func() time.Time
	// Probes, when set, reports each replica's synthetic probes: a replica
	// whose probes all fail is not evaluated as healthy with headroom,
	// whatever its metrics say.
	Probes probe.Summaries
}

// Watcher scrapes every target each round, keeps a window per replica,
// evaluates headroom, and publishes an immutable Round that the exporter
// reads. One goroutine (Run) owns the windows; readers only load the
// latest Round.
type Watcher struct {
	opts WatcherOptions

	mu      sync.Mutex // guards targets between SetTargets and a round
	targets map[string]*replicaState

	latest      atomic.Pointer[Round]
	evaluations atomic.Uint64
}

type replicaState struct {
	target   Target
	window   *Window
	counters sloCounters
	// model is the last model the engine reported, so a failed scrape
	// keeps the replica's series under the same labels.
	model string
	// edges logs SLO thresholds that fall between the scraped bucket edges.
	edges edgeWarner
	// engine is the adapter of the last good scrape, logged when it changes.
	engine string
}

// Round is the result of one evaluation round. It is never modified after
// it is published.
type Round struct {
	At          time.Time
	Replicas    []ReplicaEval // sorted by replica
	Fleet       map[string]knee.Fleet
	Evaluations uint64
}

// ReplicaEval is one replica's state after a round.
type ReplicaEval struct {
	Replica, Model, Profile string
	// Engine is the adapter that read the replica's metrics: configured,
	// or detected from the metric names; kept from the last good scrape.
	Engine string

	EngineUp       bool
	EngineError    string
	EngineDuration time.Duration

	DCGMConfigured bool
	DCGMUp         bool
	DCGMError      string
	DCGMDuration   time.Duration

	Observation knee.Observation
	Result      knee.Result
	SLO         *knee.SLO  // nil without a profile
	Knee        *knee.Knee // nil without a profile

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
	return &Watcher{opts: opts, targets: map[string]*replicaState{}}
}

// SetTargets replaces the watched replicas. A replica whose metrics URL is
// unchanged keeps its window; a replica that is gone is dropped, so its
// series disappear from the next round.
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
			old.target = t
			next[t.Replica] = old
			continue
		}
		win, err := NewWindow(w.opts.Window, windowCapacity(w.opts.Window, w.opts.Interval))
		if err != nil {
			return err
		}
		next[t.Replica] = &replicaState{target: t, window: win}
	}
	w.targets = next
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

// Run evaluates a round immediately and then every interval until ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	for {
		w.EvaluateOnce(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// EvaluateOnce scrapes every target, evaluates it and publishes the round.
func (w *Watcher) EvaluateOnce(ctx context.Context) *Round {
	w.mu.Lock()
	defer w.mu.Unlock()
	states := make([]*replicaState, 0, len(w.targets))
	for _, s := range w.targets {
		states = append(states, s)
	}
	sort.Slice(states, func(i, j int) bool { return states[i].target.Replica < states[j].target.Replica })

	dcgm := w.scrapeDCGM(ctx, states)
	evals := make([]ReplicaEval, len(states))
	sem := make(chan struct{}, w.opts.Parallelism)
	var wg sync.WaitGroup
	for i, s := range states {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			evals[i] = w.evaluate(ctx, s, dcgm)
		}()
	}
	wg.Wait()
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
	r := &Round{
		At:          w.opts.Now(),
		Replicas:    evals,
		Fleet:       knee.FleetSummary(byModel, w.opts.TargetHeadroom),
		Evaluations: w.evaluations.Add(1),
	}
	w.latest.Store(r)
	return r
}

type dcgmResult struct {
	snap     DCGMSnapshot
	err      error
	duration time.Duration
}

// scrapeDCGM fetches each distinct DCGM endpoint once per round: one
// dcgm-exporter usually serves every GPU of a node, shared by its replicas.
func (w *Watcher) scrapeDCGM(ctx context.Context, states []*replicaState) map[string]dcgmResult {
	urls := map[string]*http.Client{}
	for _, s := range states {
		if d := s.target.DCGM; d != nil {
			urls[d.URL] = d.Client
		}
	}
	out := make(map[string]dcgmResult, len(urls))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for url, client := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			snap, err := NewScraper(client, w.opts.Limits).ScrapeDCGM(ctx, url)
			mu.Lock()
			out[url] = dcgmResult{snap: snap, err: err, duration: time.Since(start)}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// scrapeOutcome is what one round fetched for one replica.
type scrapeOutcome struct {
	snap     Snapshot
	err      error
	duration time.Duration
	dcgm     *dcgmResult // nil when the replica has no DCGM target
}

func (w *Watcher) evaluate(ctx context.Context, s *replicaState, dcgm map[string]dcgmResult) ReplicaEval {
	t := s.target
	start := time.Now()
	snap, err := NewScraper(t.Client, w.opts.Limits).Scrape(ctx, t.MetricsURL, Options{Engine: t.Engine, Model: t.Model})
	out := scrapeOutcome{snap: snap, err: err, duration: time.Since(start)}
	if d := t.DCGM; d != nil {
		r := dcgm[d.URL]
		out.dcgm = &r
	}
	return w.assess(s, out)
}

// assess folds one round's scrapes into the replica's window and evaluates
// it. It does no I/O, so tests can feed it a fixed sequence of snapshots.
func (w *Watcher) assess(s *replicaState, out scrapeOutcome) ReplicaEval {
	t := s.target
	e := ReplicaEval{Replica: t.Replica, Model: t.Model, Profile: t.ProfileName, EngineDuration: out.duration}
	switch {
	case t.Profile != nil:
		slo, k := t.Profile.SLO, t.Profile.Knee
		e.SLO, e.Knee = &slo, &k
	case t.SLO.TTFT > 0 && t.SLO.TPOT > 0:
		slo := t.SLO
		e.SLO = &slo
	}
	if out.err == nil && out.snap.Model != "" {
		s.model = out.snap.Model
	}
	if out.err == nil {
		s.noteEngine(w.opts.Logger, out.snap.Engine)
	}
	e.Engine = s.engine
	if e.Model == "" {
		e.Model = s.model
	}

	var gpus []GPUSnapshot
	if d := t.DCGM; d != nil && out.dcgm != nil {
		e.DCGMConfigured = true
		e.DCGMDuration = out.dcgm.duration
		switch {
		case out.dcgm.err != nil:
			e.DCGMError = out.dcgm.err.Error()
		default:
			gpus = d.selectGPUs(out.dcgm.snap)
			if len(gpus) == 0 {
				e.DCGMError = "no GPU matches the replica's selector"
			} else {
				e.DCGMUp = true
			}
		}
	}

	if out.err != nil {
		e.EngineError = out.err.Error()
		w.opts.Logger.Warn("engine scrape failed", "replica", t.Replica, "err", out.err)
		e.Observation = knee.NewObservation()
		e.Result = knee.Evaluate(e.Observation, nil, w.opts.Knee)
		e.Result.Reason = ReasonEngineDown
		return w.withCounters(e, s)
	}
	e.EngineUp = true
	snap := out.snap
	snap.AttachGPUs(gpus)
	if err := s.window.Add(snap); err != nil {
		w.opts.Logger.Warn("snapshot rejected", "replica", t.Replica, "err", err)
	}
	s.counters.add(snap, e.SLO)
	s.edges.check(w.opts.Logger, t.Replica, snap, e.SLO)

	e.Observation = Observe(s.window, snap.Time, e.SLO)
	if w.opts.Probes != nil {
		if pt, ok := w.opts.Probes.Traffic(t.Replica, snap.Time.Add(-s.window.Width()), snap.Time); ok {
			excludeProbeTraffic(&e.Observation, s.window, snap.Time, pt)
		}
	}
	e.Result = knee.Evaluate(e.Observation, t.Profile, w.opts.Knee)
	if e.Result.OK && e.Knee != nil {
		// The knee compared with, moved with the mix when the profile has a
		// mix model: the one the on-call should see beside the headroom.
		k := e.Result.Knee
		e.Knee = &k
	}
	if w.opts.Probes != nil {
		if ps, ok := w.opts.Probes.Summary(t.Replica); ok && ps.AllFailing {
			e.Result = knee.Evaluate(knee.NewObservation(), nil, w.opts.Knee)
			e.Result.Reason = ReasonProbesFailing
		}
	}
	return w.withCounters(e, s)
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
}

func (w *Watcher) withCounters(e ReplicaEval, s *replicaState) ReplicaEval {
	if e.SLO != nil && s.counters.prev != nil {
		e.HasCounters = true
		e.RequestsTotal = s.counters.total
		e.GoodTTFTRequests = s.counters.goodTTFT
		e.GoodTPOTRequests = s.counters.goodTPOT
		e.TTFTSum, e.TPOTCount, e.TPOTSum = s.counters.sumTTFT, s.counters.countTPOT, s.counters.sumTPOT
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
