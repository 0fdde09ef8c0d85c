package detection

import (
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
)

// alertState is the lifecycle Prometheus gives one alert instance.
type alertState int

const (
	alertInactive alertState = iota
	alertPending
	alertFiring
)

// alertInstance is one label set of an alerting rule.
type alertInstance struct {
	labels   labels.Labels
	state    alertState
	activeAt time.Time
	firedAt  time.Time
	// keepFiringSince is when a firing instance's expression first lost it
	// while keep_firing_for held it firing; zero while it is present.
	keepFiringSince time.Time
}

// Firing is one stretch during which an alert instance was firing:
// [Start, End), End zero while it still fires at the end of the run.
type Firing struct {
	Alert  string
	Labels labels.Labels
	Start  time.Time
	End    time.Time
}

// alertTracker applies Prometheus's `for` semantics to the results of an
// alerting rule's expression, evaluation by evaluation, as
// rules.AlertingRule.Eval does: a label set that appears becomes pending
// with activeAt = the evaluation time; it fires at the first evaluation at
// which it has been active for at least the hold duration; a pending one
// that the result lacks is dropped, and a firing one resolves at the first
// evaluation that has lacked it for keep_firing_for (at once without it).
// A firing instance that comes back within keep_firing_for is the same
// firing, not a new page.
// (Prometheus's rules package itself cannot be imported here: it pulls the
// notifier's cloud service-discovery modules into go.mod. The agreement of
// this tracker with real Prometheus is checked by a promtool test.)
type alertTracker struct {
	name    string
	hold    time.Duration
	keep    time.Duration // keep_firing_for
	extra   labels.Labels // the rule's own labels
	active  map[uint64]*alertInstance
	firings []Firing
	open    map[uint64]int // index into firings of a firing instance
}

func newAlertTracker(name string, hold, keepFiringFor time.Duration, extra labels.Labels) *alertTracker {
	return &alertTracker{name: name, hold: hold, keep: keepFiringFor, extra: extra, active: map[uint64]*alertInstance{}, open: map[uint64]int{}}
}

// eval folds one evaluation's result vector, at ts, into the alert states.
func (a *alertTracker) eval(ts time.Time, vec promql.Vector) {
	present := make(map[uint64]labels.Labels, len(vec))
	for _, s := range vec {
		b := labels.NewBuilder(s.Metric)
		b.Del(labels.MetricName)
		a.extra.Range(func(l labels.Label) { b.Set(l.Name, l.Value) })
		b.Set(labels.AlertName, a.name)
		l := b.Labels()
		present[l.Hash()] = l
	}
	for h, l := range present {
		if inst, ok := a.active[h]; ok && inst.state != alertInactive {
			inst.keepFiringSince = time.Time{}
			continue
		}
		a.active[h] = &alertInstance{labels: l, state: alertPending, activeAt: ts}
	}
	for h, inst := range a.active {
		if _, ok := present[h]; !ok {
			if inst.state == alertFiring && a.keep > 0 {
				if inst.keepFiringSince.IsZero() {
					inst.keepFiringSince = ts
				}
				if ts.Sub(inst.keepFiringSince) < a.keep {
					continue
				}
			}
			if inst.state == alertFiring {
				a.firings[a.open[h]].End = ts
				delete(a.open, h)
			}
			delete(a.active, h)
			continue
		}
		if inst.state == alertPending && ts.Sub(inst.activeAt) >= a.hold {
			inst.state = alertFiring
			inst.firedAt = ts
			a.open[h] = len(a.firings)
			a.firings = append(a.firings, Firing{Alert: a.name, Labels: inst.labels, Start: ts})
		}
	}
}
