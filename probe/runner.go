package probe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"

	commonconfig "github.com/prometheus/common/config"

	"github.com/kneewatch/kneewatch/config"
)

// ReplicaState is what the watcher's latest evaluation says about a
// replica, for deciding whether to probe it. Unknown values are NaN.
type ReplicaState struct {
	Model                string  // the model the engine reports
	Headroom             float64 // headroom to the knee; < 0 past it
	QueueGrowthPerSecond float64 // slope of the waiting queue over the window
	Waiting              float64 // mean waiting requests over the window
}

// StateFunc returns the latest state of a replica; false when there is none
// yet (the replica is then probed, within its budget).
type StateFunc func(replica string) (ReplicaState, bool)

// Options configure a Runner.
type Options struct {
	// Probes is the probes section of the config (interval, timeout, sizes,
	// API, key source, skip switches, load cap). Enabled is not consulted:
	// building a Runner means probing.
	Probes config.Probes
	// Window is the watcher's evaluation window; summaries and attainment
	// cover max(Window, 3 × interval) so they always hold a few probes.
	Window time.Duration
	Logger *slog.Logger
	// Transport sends the probes; nil means a fresh connection per probe
	// (see Client.Transport). Tests inject one.
	Transport http.RoundTripper
	// Seed makes the jitter reproducible; 0 means random.
	Seed uint64
	// Now is the clock of the windows and the budget (default time.Now).
	Now func() time.Time
}

// jitterFraction spreads each replica's probes by ±10% of the interval so
// probes of many replicas started together drift apart.
const jitterFraction = 0.1

// Runner probes a set of replicas; it is a prometheus.Collector of the
// probe metric families. Build it with New, give it targets with
// SetTargets, and start it with Run.
type Runner struct {
	opts   Options
	client *Client
	log    *slog.Logger
	window time.Duration

	randMu sync.Mutex
	rand   *rand.Rand

	keyMu      sync.Mutex
	lastKey    commonconfig.Secret
	lastKeyErr string

	mu       sync.Mutex
	replicas map[string]*replicaState
	run      *running // nil until Run
}

// running is what Run shares with SetTargets to start new replicas' loops.
type running struct {
	ctx   context.Context
	state StateFunc
	wg    *sync.WaitGroup
}

// New validates the options and returns a Runner with no targets.
func New(opts Options) (*Runner, error) {
	p := opts.Probes
	var errs []error
	interval, timeout := p.Interval.D(), p.Timeout.D()
	if interval <= 0 {
		errs = append(errs, fmt.Errorf("probes.interval must be above 0, got %s", interval))
	}
	if timeout <= 0 || timeout >= interval {
		errs = append(errs, fmt.Errorf("probes.timeout %s must be above 0 and shorter than probes.interval (%s)", timeout, interval))
	}
	if p.PromptTokens < 1 {
		errs = append(errs, fmt.Errorf("probes.prompt_tokens must be at least 1, got %d", p.PromptTokens))
	}
	if p.MaxTokens < 1 {
		errs = append(errs, fmt.Errorf("probes.max_tokens must be at least 1, got %d", p.MaxTokens))
	}
	if p.API != config.ProbeAPICompletions && p.API != config.ProbeAPIChat {
		errs = append(errs, fmt.Errorf("probes.api: unknown API %q (want completions or chat)", p.API))
	}
	if !(p.LoadRatioCap > 0 && p.LoadRatioCap < 1) {
		errs = append(errs, fmt.Errorf("probes.load_ratio_cap %v is outside (0, 1)", p.LoadRatioCap))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &Runner{
		opts: opts,
		client: &Client{
			API: p.API, PromptTokens: p.PromptTokens, MaxTokens: p.MaxTokens, IgnoreEOS: p.IgnoreEOS,
			Timeout: timeout, Transport: opts.Transport,
		},
		log:      opts.Logger,
		window:   max(opts.Window, 3*interval),
		rand:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		replicas: map[string]*replicaState{},
	}, nil
}

// Window is the span Summary and the attainment metric cover.
func (r *Runner) Window() time.Duration { return r.window }

// SetTargets replaces the probed replicas. A replica that stays keeps its
// counters and histograms; one that is gone stops being probed and its
// series disappear. It may be called while Run runs.
func (r *Runner) SetTargets(targets []Target) error {
	seen := make(map[string]bool, len(targets))
	for i, t := range targets {
		if t.Replica == "" {
			return fmt.Errorf("probe target %d (%s): no replica name", i, t.BaseURL)
		}
		if seen[t.Replica] {
			return fmt.Errorf("probe target %q appears twice", t.Replica)
		}
		seen[t.Replica] = true
		u, err := url.Parse(t.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("probe target %q: OpenAI base URL %q is not an http(s) URL with a host", t.Replica, t.BaseURL)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, s := range r.replicas {
		if !seen[name] {
			if s.cancel != nil {
				s.cancel()
			}
			delete(r.replicas, name)
		}
	}
	for _, t := range targets {
		if s, ok := r.replicas[t.Replica]; ok {
			s.setTarget(t)
			continue
		}
		s := newReplicaState(t)
		r.replicas[t.Replica] = s
		if r.run != nil {
			r.startLocked(s)
		}
	}
	return nil
}

// Run probes every target until ctx ends, asking state before each probe
// whether the replica may be probed. It returns after every probe loop has
// stopped; an in-flight probe is cancelled and not counted.
func (r *Runner) Run(ctx context.Context, state StateFunc) error {
	if state == nil {
		state = func(string) (ReplicaState, bool) { return ReplicaState{}, false }
	}
	var wg sync.WaitGroup
	r.mu.Lock()
	if r.run != nil {
		r.mu.Unlock()
		return errors.New("probe runner is already running")
	}
	r.run = &running{ctx: ctx, state: state, wg: &wg}
	for _, s := range r.replicas {
		r.startLocked(s)
	}
	n := len(r.replicas)
	r.mu.Unlock()
	r.log.Info("probing replicas", "replicas", n, "interval", r.opts.Probes.Interval.D(), "timeout", r.opts.Probes.Timeout.D(),
		"api", r.opts.Probes.API, "load_ratio_cap", r.opts.Probes.LoadRatioCap)

	<-ctx.Done()
	// Stop SetTargets from starting loops before waiting for the running
	// ones, so no loop is added to the WaitGroup while it is waited on.
	r.mu.Lock()
	r.run = nil
	for _, s := range r.replicas {
		s.cancel = nil
	}
	r.mu.Unlock()
	wg.Wait()
	return nil
}

// startLocked starts a replica's probe loop under the running context.
func (r *Runner) startLocked(s *replicaState) {
	ctx, cancel := context.WithCancel(r.run.ctx)
	s.cancel = cancel
	state := r.run.state
	r.run.wg.Go(func() { r.loop(ctx, s, state) })
}

// Summary returns the replica's probes over Window, and false when the
// replica is not probed (no OpenAI URL, or probes are off: a nil Runner).
func (r *Runner) Summary(replica string) (Summary, bool) {
	if r == nil {
		return Summary{}, false
	}
	r.mu.Lock()
	s, ok := r.replicas[replica]
	r.mu.Unlock()
	if !ok {
		return Summary{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.summaryLocked(r.opts.Now(), r.window), true
}

// sortedReplicas returns the replicas' states ordered by name.
func (r *Runner) sortedReplicas() []*replicaState {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*replicaState, 0, len(r.replicas))
	for _, s := range r.replicas {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
