package watch

import (
	"errors"
	"fmt"

	"github.com/kneewatch/kneewatch/collector"
)

// ReplayScrape is one replica's scrapes for one replayed round, fetched
// elsewhere: recorded earlier, or produced by a simulator in virtual time.
type ReplayScrape struct {
	// Replica names the target, as in Target.Replica.
	Replica string
	// Engine is the normalized engine scrape; its Time must be set. Ignored
	// when EngineErr is set.
	Engine    collector.Snapshot
	EngineErr error
	// DCGM is the DCGM scrape of the replica's GPUs, used only when the
	// target has a DCGM source; nil with a DCGM source means that scrape failed
	// with DCGMErr (or an error saying it is missing).
	DCGM    *collector.DCGMSnapshot
	DCGMErr error
}

// errNotReplayed is the engine error of a replica left out of a replayed round.
var errNotReplayed = errors.New("no scrape in the replayed round")

// Replay evaluates one round from scrapes fetched elsewhere and publishes
// it, exactly as EvaluateOnce does after its own scrapes: each replica's
// snapshot goes into its window, is evaluated against its knee, and the
// round becomes what Latest returns (and the exporter reads). A watched
// replica missing from scrapes counts as down for the round. It does no
// I/O, so a bench can drive the real inference in virtual time: set
// WatcherOptions.Now to the virtual clock, since the round is stamped with it.
func (w *Watcher) Replay(scrapes []ReplayScrape) (*Round, error) {
	w.mu.Lock()
	byReplica := make(map[string]*ReplayScrape, len(scrapes))
	for i := range scrapes {
		s := &scrapes[i]
		if _, ok := w.targets[s.Replica]; !ok {
			w.mu.Unlock()
			return nil, fmt.Errorf("replay: replica %q is not a target", s.Replica)
		}
		if _, dup := byReplica[s.Replica]; dup {
			w.mu.Unlock()
			return nil, fmt.Errorf("replay: replica %q appears twice in one round", s.Replica)
		}
		if s.EngineErr == nil && s.Engine.Time.IsZero() {
			w.mu.Unlock()
			return nil, fmt.Errorf("replay: replica %q: engine snapshot has no time", s.Replica)
		}
		byReplica[s.Replica] = s
	}
	states := w.sortedStatesLocked()
	w.mu.Unlock()

	for _, s := range states {
		out := replayOutcome(s.target, byReplica[s.target.Replica])
		out.at = w.opts.Now()
		s.mu.Lock()
		e := w.assess(s, out)
		s.mu.Unlock()
		s.last.Store(&e)
	}
	return w.publishLatest(), nil
}

// replayOutcome turns a replayed scrape into what a live round would have fetched.
func replayOutcome(t Target, s *ReplayScrape) scrapeOutcome {
	if s == nil {
		out := scrapeOutcome{err: errNotReplayed}
		if t.DCGM != nil {
			out.dcgm = &dcgmResult{err: errNotReplayed}
		}
		return out
	}
	out := scrapeOutcome{snap: s.Engine, err: s.EngineErr}
	if t.DCGM != nil {
		r := dcgmResult{err: s.DCGMErr}
		switch {
		case s.DCGM != nil && s.DCGMErr == nil:
			r.snap = *s.DCGM
		case r.err == nil:
			r.err = errNotReplayed
		}
		out.dcgm = &r
	}
	return out
}
