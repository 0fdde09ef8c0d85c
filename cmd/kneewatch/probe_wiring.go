package main

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/probe"
	"github.com/kneewatch/kneewatch/watch"
	"github.com/prometheus/client_golang/prometheus"
)

// newProber builds the synthetic probe runner for the targets that have an
// OpenAI URL, or returns nil when probes are disabled. A key source that
// cannot be read is an error now, not a failing probe later.
func newProber(cfg config.Probes, window time.Duration, targets []watch.Target, logger *slog.Logger) (*probe.Runner, error) {
	if !cfg.Enabled {
		return nil, nil
	}
	if _, err := cfg.APIKey(); err != nil {
		return nil, err
	}
	r, err := probe.New(probe.Options{Probes: cfg, Window: window, Logger: logger.With("component", "probe")})
	if err != nil {
		return nil, err
	}
	if err := r.SetTargets(probeTargets(targets)); err != nil {
		return nil, err
	}
	return r, nil
}

// probeTargets maps the watcher's targets to probe targets: those with an
// OpenAI URL, with their knee throughput (the probe budget) and the SLO
// the watcher judges them by (the histograms' extra edges).
func probeTargets(targets []watch.Target) []probe.Target {
	var out []probe.Target
	for _, t := range targets {
		if t.OpenAIURL == "" {
			continue
		}
		pt := probe.Target{Replica: t.Replica, Model: t.Model, Namespace: t.Namespace, Pod: t.Pod, Labels: t.Labels, BaseURL: t.OpenAIURL,
			SLOTTFT: t.SLO.TTFT.D(), SLOTPOT: t.SLO.TPOT.D()}
		if p := t.Profile; p != nil {
			pt.KneeOutputTokensPerSecond = p.Knee.OutputTokensPerSecond
			pt.SLOTTFT, pt.SLOTPOT = p.SLO.TTFT.D(), p.SLO.TPOT.D()
		}
		out = append(out, pt)
	}
	return out
}

// runProber probes until ctx ends, skipping a replica when the watcher's
// latest round puts it past its knee or its queue growing. A nil runner
// (probes disabled) returns at once.
func runProber(ctx context.Context, r *probe.Runner, w *watch.Watcher) error {
	if r == nil {
		return nil
	}
	return r.Run(ctx, watcherState(w.Latest))
}

// watcherState answers the probe runner from the latest round: headroom
// only when the evaluation is ok, the queue from the observation (known
// whenever the engine was scraped, with or without a profile).
func watcherState(latest func() *watch.Round) probe.StateFunc {
	return func(replica string) (probe.ReplicaState, bool) {
		round := latest()
		if round == nil {
			return probe.ReplicaState{}, false
		}
		i, found := slices.BinarySearchFunc(round.Replicas, replica, func(e watch.ReplicaEval, name string) int {
			return strings.Compare(e.Replica, name)
		})
		if !found {
			return probe.ReplicaState{}, false
		}
		e := round.Replicas[i]
		st := probe.ReplicaState{
			Model:                e.Model,
			Headroom:             math.NaN(),
			QueueGrowthPerSecond: e.Observation.QueueGrowthPerSecond,
			Waiting:              e.Observation.Waiting,
		}
		if e.Result.OK {
			st.Headroom = e.Result.Headroom
		}
		return st, true
	}
}

// proberCollectors is what to register for the runner: nothing when nil.
func proberCollectors(r *probe.Runner) []prometheus.Collector {
	if r == nil {
		return nil
	}
	return []prometheus.Collector{r}
}

// demoProbes is the demo's probe config: on, every 5 s so the metrics fill
// quickly. The demo's knee (about 5.7k output tok/s for the default preset
// and chat mix) keeps 16 tokens per 5 s near 0.06% of it, under the 0.1% cap.
func demoProbes() config.Probes {
	p := config.DefaultProbes()
	p.Enabled = true
	p.Interval = config.Duration(5 * time.Second)
	p.Timeout = config.Duration(4 * time.Second)
	return p
}
