// Package demo runs the whole product on one machine: a simulated fleet of
// vLLM-like replicas, a closed-loop load generator that holds each replica at
// a chosen share of its knee, the simulator's ground-truth knee profile for
// each, and the watcher comparing the live operating point with that knee.
package demo

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/sweep"
	"github.com/kneewatch/kneewatch/watch"
	"github.com/kneewatch/kneewatch/workload"
)

// Load is one demo replica's share of its knee concurrency.
type Load struct {
	Name      string  // a word for the table: idle, half, near, past
	KneeShare float64 // target in-flight ÷ knee concurrency
}

// DefaultLoads are the four operating points the demo shows.
var DefaultLoads = []Load{{"idle", 0}, {"half", 0.5}, {"near", 0.9}, {"past", 1.4}}

// Options configure a demo fleet.
type Options struct {
	Preset   string // simulator preset (default llama-3.1-8b-h100)
	Workload string // workload preset (default chat)
	SLO      knee.SLO
	Loads    []Load // one replica per entry (default DefaultLoads)
	Speed    float64
	// Profile, when set, is the knee every replica is judged against (a
	// profile written by `kneewatch sweep`, say) instead of the
	// simulator's ground truth; the replicas are still held at shares of
	// its knee.
	Profile *knee.Profile
	// Listen and DCGMListen are the simulator's addresses (127.0.0.1:0 picks free ports).
	Listen, DCGMListen string
	Seed               uint64
	Logger             *slog.Logger
}

// DefaultTTFT and DefaultTPOT are the SLO thresholds the demo measures its
// knee against when none are given.
const (
	DefaultTTFT = 250 * time.Millisecond
	DefaultTPOT = 25 * time.Millisecond
)

func (o *Options) defaults() {
	if o.Preset == "" {
		o.Preset = "llama-3.1-8b-h100"
	}
	if o.Workload == "" {
		o.Workload = "chat"
	}
	// The default SLO sits on bucket edges of vLLM's TTFT and TPOT
	// histograms (0.25 s, 0.025 s), so attainment is counted exactly and
	// the demo's first screen carries no warning about its own thresholds;
	// it is the detection bench's 8B/H100 chat SLO (tight) too.
	if o.SLO.TTFT == 0 {
		o.SLO.TTFT = knee.Duration(DefaultTTFT)
	}
	if o.SLO.TPOT == 0 {
		o.SLO.TPOT = knee.Duration(DefaultTPOT)
	}
	if o.SLO.Quantile == 0 {
		o.SLO.Quantile = 0.99
	}
	if len(o.Loads) == 0 {
		o.Loads = DefaultLoads
	}
	if o.Speed == 0 {
		o.Speed = 1
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.DCGMListen == "" {
		o.DCGMListen = "127.0.0.1:0"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Replica is one demo replica: where it listens and the load it is held at.
type Replica struct {
	sim.FleetReplica
	Load        Load
	Concurrency int // closed-loop workers: round(KneeShare × knee)
	// TrueHeadroom is the ground truth the watcher should report:
	// 1 − Concurrency ÷ the true knee.
	TrueHeadroom float64
}

// Fleet is a running demo fleet under load.
type Fleet struct {
	Profile  *knee.Profile // the simulator's ground-truth profile, shared by every replica
	Replicas []Replica
	DCGMURL  string

	sim   *sim.Fleet
	loops []*sweep.ClosedLoop
	errs  *errorCount
	// started is when the load generators were started (see WaitSteady).
	started time.Time
}

// loadRamp spreads each replica's first requests over this long, so the
// load does not start as one burst of prefills.
const loadRamp = 5 * time.Second

// SteadyAfter is how long after Start the load is steady: the ramp, then
// time for the first requests to finish and the workers' requests to
// spread over their lifetimes. Until then a replica's in-flight count and
// throughput are still climbing, and a window that reaches back into the
// climb compares a throughput averaged over low loads with the knee curve
// at their mean, reading a replica as slower than it is.
const SteadyAfter = loadRamp + 10*time.Second

// Start finds the preset's true knee in virtual time, starts the simulated
// fleet, and holds each replica at its share of the knee.
func Start(ctx context.Context, o Options) (*Fleet, error) {
	o.defaults()
	preset, err := sim.LoadPreset(o.Preset)
	if err != nil {
		return nil, err
	}
	gen, err := workload.Resolve(o.Workload, o.Seed)
	if err != nil {
		return nil, err
	}
	var prof knee.Profile
	if o.Profile != nil {
		prof = *o.Profile
	} else if prof, err = sim.FindKnee(ctx, sim.KneeConfig{
		Engine:   sim.Config{Preset: preset, Speed: o.Speed},
		Workload: gen,
		SLO:      o.SLO,
		Seed:     o.Seed,
		// The demo's load generator is closed-loop (a fixed number of
		// workers per replica), so its knee is measured closed-loop too;
		// `kneewatch sweep` and `sim knee` default to poisson because
		// production traffic is open-loop.
		Arrivals: knee.ArrivalsClosedLoop,
	}); err != nil {
		return nil, fmt.Errorf("ground-truth knee for %s/%s: %w", o.Preset, o.Workload, err)
	}
	f := &Fleet{Profile: &prof, errs: &errorCount{}}
	sf, err := sim.StartFleet(ctx, sim.FleetConfig{
		Replicas:   len(o.Loads),
		Listen:     o.Listen,
		DCGMListen: o.DCGMListen,
		Preset:     preset,
		Speed:      o.Speed,
		NamePrefix: "demo",
		Logger:     o.Logger,
	})
	if err != nil {
		return nil, err
	}
	f.sim, f.DCGMURL = sf, sf.DCGMURL()

	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	var genMu sync.Mutex
	for i, r := range sf.Replicas() {
		load := o.Loads[i]
		c := int(load.KneeShare*prof.Knee.Concurrency + 0.5)
		rep := Replica{FleetReplica: r, Load: load, Concurrency: c, TrueHeadroom: 1 - float64(c)/prof.Knee.Concurrency}
		f.Replicas = append(f.Replicas, rep)
		loop := &sweep.ClosedLoop{
			Client: &sweep.Client{BaseURL: r.OpenAIBaseURL, Model: preset.Model, Prompt: workload.PromptOfTokens, HTTP: httpClient},
			Next: func() sweep.Request {
				genMu.Lock()
				defer genMu.Unlock()
				w := gen.Next()
				return sweep.Request{PromptTokens: w.PromptTokens, MaxTokens: w.OutputTokens}
			},
			OnResult: f.errs.observe,
			Ramp:     loadRamp,
		}
		loop.SetConcurrency(ctx, c)
		f.loops = append(f.loops, loop)
	}
	f.started = time.Now()
	return f, nil
}

// WaitSteady waits until after has passed since Start (SteadyAfter for a
// load that is steady) or ctx ends. The TrueHeadroom of a replica is its
// steady state's: a watcher started before then watches the load climb,
// not the operating point the table's truth describes.
func (f *Fleet) WaitSteady(ctx context.Context, after time.Duration) error {
	t := time.NewTimer(time.Until(f.started.Add(after)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Targets are the watcher targets for the demo's replicas, each with the
// ground-truth profile and its GPU on the fleet's DCGM endpoint.
func (f *Fleet) Targets() []watch.Target {
	out := make([]watch.Target, 0, len(f.Replicas))
	for _, r := range f.Replicas {
		out = append(out, watch.Target{
			Replica:     r.Name,
			Model:       f.Profile.Match.Model,
			Engine:      "vllm",
			MetricsURL:  r.MetricsURL,
			ProfileName: f.Profile.Metadata.Name,
			Profile:     f.Profile,
			SLO:         f.Profile.SLO,
			OpenAIURL:   r.OpenAIBaseURL,
			DCGM: &watch.DCGMTarget{URL: f.DCGMURL,
				Selectors: []collector.GPUSelector{{Pod: r.Name, Namespace: "default"}}},
		})
	}
	return out
}

// Errors returns how many load-generator requests failed so far.
func (f *Fleet) Errors() int64 { return f.errs.n.Load() }

// Close stops the load and the simulated fleet.
func (f *Fleet) Close() error {
	for _, l := range f.loops {
		l.Stop()
	}
	return f.sim.Close()
}
