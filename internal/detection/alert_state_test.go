package detection

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
)

func TestAlertTrackerFollowsPrometheusForSemantics(t *testing.T) {
	series := labels.FromStrings("__name__", "x", "replica", "a")
	active := promql.Vector{{Metric: series, F: 1}}
	step := 15 * time.Second
	// Active at evaluations 1–6, gone at 7, back at 8–9.
	pattern := []bool{false, true, true, true, true, true, true, false, true, true}
	tr := newAlertTracker("A", time.Minute, 0, labels.FromStrings("severity", "critical"))
	for i, on := range pattern {
		var v promql.Vector
		if on {
			v = active
		}
		tr.eval(benchEpoch.Add(time.Duration(i)*step), v)
	}
	want := []Firing{
		// Pending from evaluation 1 (0:15); fires at 1:15, the first evaluation a
		// full minute later; resolved at 1:45, when the result lacks it.
		{Alert: "A", Labels: labels.FromStrings("alertname", "A", "replica", "a", "severity", "critical"),
			Start: benchEpoch.Add(5 * step), End: benchEpoch.Add(7 * step)},
	}
	// Back at 2:00 it is pending again, from scratch: not firing by 2:15.
	if diff := cmp.Diff(want, tr.firings, cmp.Comparer(func(a, b labels.Labels) bool { return labels.Equal(a, b) })); diff != "" {
		t.Errorf("firings (-want +got):\n%s", diff)
	}
}

func TestAlertTrackerWithoutHoldFiresAtOnce(t *testing.T) {
	tr := newAlertTracker("A", 0, 0, labels.EmptyLabels())
	tr.eval(benchEpoch, promql.Vector{{Metric: labels.FromStrings("k", "v"), F: 1}})
	if len(tr.firings) != 1 || !tr.firings[0].Start.Equal(benchEpoch) {
		t.Errorf("firings %v, want one starting at the first evaluation", tr.firings)
	}
}
