package detection

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kneewatch/kneewatch/internal/promstore"
)

// newEngine is Prometheus's PromQL engine with a server's defaults (the
// 5-minute lookback delta, subqueries stepped at the rule evaluation
// interval), the same one every other PromQL check in the project uses.
func newEngine() *promql.Engine { return promstore.NewEngine() }

// ruleEvaluator runs rule groups over the store at each evaluation time, as
// Prometheus's rule manager does: groups in order, rules in order, each
// recording rule's output written back to the store (with staleness
// markers for series it stops returning) before the next rule reads it,
// and each alerting rule's result folded into its alert states.
type ruleEvaluator struct {
	engine *promql.Engine
	store  *store
	groups []rulefmt.RuleGroup
	// recorded holds each recording rule's series of its previous
	// evaluation, by group and position (two rules may share a name).
	recorded map[string]map[string]labels.Labels
	trackers map[string]*alertTracker
}

func newRuleEvaluator(engine *promql.Engine, st *store, groups []rulefmt.RuleGroup) (*ruleEvaluator, error) {
	e := &ruleEvaluator{engine: engine, store: st, groups: groups,
		recorded: map[string]map[string]labels.Labels{}, trackers: map[string]*alertTracker{}}
	p := parser.NewParser(parser.Options{})
	for _, g := range groups {
		for _, r := range g.Rules {
			if _, err := p.ParseExpr(r.Expr); err != nil {
				return nil, fmt.Errorf("group %s, rule %s%s: %w", g.Name, r.Record, r.Alert, err)
			}
			if r.Alert != "" {
				if _, dup := e.trackers[r.Alert]; dup {
					return nil, fmt.Errorf("alert %s is defined twice", r.Alert)
				}
				e.trackers[r.Alert] = newAlertTracker(r.Alert, time.Duration(r.For), time.Duration(r.KeepFiringFor), labels.FromMap(r.Labels))
			}
		}
	}
	return e, nil
}

// evalEvery evaluates every group once per interval from interval into a
// run to its end, as a rule manager running alongside it would.
func (e *ruleEvaluator) evalEvery(ctx context.Context, interval, length time.Duration) error {
	end := benchEpoch.Add(length)
	for ts := benchEpoch.Add(interval); !ts.After(end); ts = ts.Add(interval) {
		if err := e.evalAt(ctx, ts); err != nil {
			return err
		}
	}
	return nil
}

// scores judges each detector's firings, over a run of the given length,
// against its breaches.
func (e *ruleEvaluator) scores(ds []Detector, breaches []Episode, length time.Duration) []DetectorScore {
	out := make([]DetectorScore, 0, len(ds))
	for _, d := range ds {
		var fs []Firing
		for _, a := range d.Alerts {
			fs = append(fs, e.firings(a)...)
		}
		out = append(out, score(d, fs, breaches, benchEpoch, benchEpoch.Add(length)))
	}
	return out
}

// evalAt evaluates every group at ts.
func (e *ruleEvaluator) evalAt(ctx context.Context, ts time.Time) error {
	for _, g := range e.groups {
		for i, r := range g.Rules {
			vec, err := e.query(ctx, r.Expr, ts)
			if err != nil {
				return fmt.Errorf("group %s, rule %s%s at %s: %w", g.Name, r.Record, r.Alert, ts.Format(time.RFC3339), err)
			}
			if r.Alert != "" {
				e.trackers[r.Alert].eval(ts, vec)
				continue
			}
			if err := e.record(fmt.Sprintf("%s/%d", g.Name, i), r, ts, vec); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *ruleEvaluator) query(ctx context.Context, expr string, ts time.Time) (promql.Vector, error) {
	q, err := e.engine.NewInstantQuery(ctx, e.store, nil, expr, ts)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, res.Err
	}
	switch v := res.Value.(type) {
	case promql.Vector:
		return v, nil
	case promql.Scalar:
		// A rule whose expression is a scalar yields one sample without labels.
		return promql.Vector{{T: v.T, F: v.V, Metric: labels.EmptyLabels()}}, nil
	}
	return nil, fmt.Errorf("expression %q returned a %s, not a vector", expr, res.Value.Type())
}

// record writes a recording rule's result at ts, named by the rule, and
// marks series it returned last time but not now as stale.
func (e *ruleEvaluator) record(id string, r rulefmt.Rule, ts time.Time, vec promql.Vector) error {
	t := ts.UnixMilli()
	now := make(map[string]labels.Labels, len(vec))
	for _, s := range vec {
		b := labels.NewBuilder(s.Metric)
		b.Set(model.MetricNameLabel, r.Record)
		for k, v := range r.Labels {
			b.Set(k, v)
		}
		l := b.Labels()
		now[l.String()] = l
		if err := e.store.Add(l, t, s.F); err != nil {
			return fmt.Errorf("recording %s: %w", r.Record, err)
		}
	}
	for key, l := range e.recorded[id] {
		if _, ok := now[key]; !ok {
			if err := e.store.Add(l, t, staleNaN); err != nil {
				return fmt.Errorf("recording %s: %w", r.Record, err)
			}
		}
	}
	e.recorded[id] = now
	return nil
}

// firings returns every firing stretch of the named alert.
func (e *ruleEvaluator) firings(alert string) []Firing {
	if t := e.trackers[alert]; t != nil {
		return t.firings
	}
	return nil
}
