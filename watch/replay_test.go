package watch

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kneewatch/kneewatch/collector"
)

func TestReplayEvaluatesRecordedScrapesLikeALiveRound(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	prof := loadValidProfile(t)
	clock := t0
	w := NewWatcher(WatcherOptions{Interval: 5 * time.Second, Window: time.Minute, Now: func() time.Time { return clock }})
	err := w.SetTargets([]Target{
		{Replica: "ok", ProfileName: "valid", Profile: prof, DCGM: &DCGMTarget{URL: "replay", Selectors: []collector.GPUSelector{{Pod: "ok"}}}},
		{Replica: "quiet", ProfileName: "valid", Profile: prof},
	})
	if err != nil {
		t.Fatal(err)
	}
	gpu := collector.DCGMSnapshot{GPUs: []collector.GPUSnapshot{{Labels: collector.GPULabels{GPU: "0", Pod: "ok"}, Gauges: map[collector.Signal]float64{collector.SignalGPUUtilization: 0.93}}}}
	var r *Round
	for i := 0; i <= 14; i++ {
		clock = t0.Add(time.Duration(i) * 5 * time.Second)
		r, err = w.Replay([]ReplayScrape{{Replica: "ok", Engine: replicaSnapshot(t0, i), DCGM: &gpu}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if w.Latest() != r || r.At != clock || r.Evaluations != 15 {
		t.Fatalf("round at %s (evaluation %d) is not the published one at %s", r.At, r.Evaluations, clock)
	}
	got := map[string][2]any{}
	for _, e := range r.Replicas {
		got[e.Replica] = [2]any{e.EngineUp, e.Result.OK}
	}
	want := map[string][2]any{"ok": {true, true}, "quiet": {false, false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("[engine up, evaluation ok] per replica (-want +got):\n%s", diff)
	}
	ok := r.Replicas[0]
	if !ok.DCGMUp || ok.Observation.GPUUtilization != 0.93 {
		t.Errorf("the replayed DCGM scrape: up %v, GPU utilization %v; want up, 0.93", ok.DCGMUp, ok.Observation.GPUUtilization)
	}
	// 40 in flight against the valid profile's knee of 112, as a live round computes it.
	if diff := cmp.Diff(40.0/112, ok.Result.Ratios[0]); diff != "" {
		t.Errorf("load ratio (-want +got):\n%s", diff)
	}
	if quiet := r.Replicas[1]; quiet.Result.Reason != ReasonEngineDown || !strings.Contains(quiet.EngineError, "no scrape") {
		t.Errorf("a replica left out of the round: reason %q, error %q; want %s and the missing scrape", quiet.Result.Reason, quiet.EngineError, ReasonEngineDown)
	}
}

func TestReplayRejectsScrapesItCannotPlace(t *testing.T) {
	w := NewWatcher(WatcherOptions{})
	if err := w.SetTargets([]Target{{Replica: "a"}}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	snap := collector.Snapshot{Time: at}
	tests := []struct {
		name    string
		scrapes []ReplayScrape
		want    string
	}{
		{"a replica that is not a target", []ReplayScrape{{Replica: "b", Engine: snap}}, `replica "b" is not a target`},
		{"a replica twice in one round", []ReplayScrape{{Replica: "a", Engine: snap}, {Replica: "a", Engine: snap}}, `replica "a" appears twice`},
		{"a snapshot without a time", []ReplayScrape{{Replica: "a"}}, `replica "a": engine snapshot has no time`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := w.Replay(tt.scrapes)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Replay error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if w.Latest() != nil {
		t.Error("a rejected replay published a round")
	}
	// A failed engine scrape needs no time: it is replayed as down.
	r, err := w.Replay([]ReplayScrape{{Replica: "a", EngineErr: errors.New("connection refused")}})
	if err != nil {
		t.Fatal(err)
	}
	if e := r.Replicas[0]; e.EngineUp || e.EngineError != "connection refused" {
		t.Errorf("a replayed failed scrape: up %v, error %q", e.EngineUp, e.EngineError)
	}
}
