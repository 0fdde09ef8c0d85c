package watch

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// runSchedule runs a schedule of the given replicas, whose turns take the
// given time each, for span, and returns when each replica's turns
// started. cancel, when set for a replica, is called at half the span.
func runSchedule(t *testing.T, interval, span time.Duration, took map[string]time.Duration, removeHalfway string) map[string][]time.Time {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	started := map[string][]time.Time{}
	sc := newSchedule(interval, newWorkers(ctx), func(ctx context.Context, s *replicaState) {
		mu.Lock()
		started[s.target.Replica] = append(started[s.target.Replica], time.Now())
		mu.Unlock()
		select {
		case <-time.After(took[s.target.Replica]):
		case <-ctx.Done():
		}
	})
	go sc.loop(ctx)
	stops := map[string]context.CancelFunc{}
	now := time.Now()
	for name := range took {
		rctx, stop := context.WithCancel(ctx)
		stops[name] = stop
		sc.add(rctx, &replicaState{target: Target{Replica: name}}, now)
	}
	time.Sleep(span / 2)
	if removeHalfway != "" {
		stops[removeHalfway]()
	}
	time.Sleep(span / 2)
	cancel()
	mu.Lock()
	defer mu.Unlock()
	return started
}

func TestATurnThatOverrunsItsIntervalRunsAgainAsItEndsAndTheOthersKeepTheirCadence(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a schedule for 2 s of wall time")
	}
	const interval = 100 * time.Millisecond
	started := runSchedule(t, interval, 2*time.Second, map[string]time.Duration{"slow": 150 * time.Millisecond, "quick": 0}, "")
	// A ticker's cadence: the slow replica's missed tick is kept (one),
	// so it runs back to back, every 150 ms: about 13 turns in 2 s.
	if n := len(started["slow"]); n < 10 || n > 15 {
		t.Errorf("the slow replica had %d turns in 2 s, want about 13 (back to back)", n)
	}
	// The quick one keeps to every 100 ms: about 20 turns.
	q := started["quick"]
	if n := len(q); n < 17 || n > 21 {
		t.Fatalf("the quick replica had %d turns in 2 s, want about 20", n)
	}
	if mean := q[len(q)-1].Sub(q[0]) / time.Duration(len(q)-1); mean < 90*time.Millisecond || mean > 110*time.Millisecond {
		t.Errorf("the quick replica's turns came every %s on average, want %s ± 10%%", mean, interval)
	}
}

func TestARemovedReplicaGetsNoMoreTurns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a schedule for 1 s of wall time")
	}
	const interval = 50 * time.Millisecond
	started := runSchedule(t, interval, time.Second, map[string]time.Duration{"kept": 0, "removed": 0}, "removed")
	if n := len(started["removed"]); n < 7 || n > 12 {
		t.Errorf("the removed replica had %d turns in the 500 ms before its removal, want about 10", n)
	}
	if n := len(started["kept"]); n < 17 {
		t.Errorf("the kept replica had %d turns in 1 s, want about 20", n)
	}
}

// TestASlotsTurnsRunAtMostMaxRunningAtOnceUnlessTheyWaitedASlot starts 40
// replicas' turns in one slot. Quick turns run at most maxRunning at once,
// the rest taken by the workers as turns end; turns that hang start anyway
// once they have waited a slot.
func TestASlotsTurnsRunAtMostMaxRunningAtOnceUnlessTheyWaitedASlot(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a schedule for 0.8 s of wall time")
	}
	const (
		interval = 2 * time.Second // slots of 200 ms
		replicas = maxRunning + 8
	)
	for _, tt := range []struct {
		name          string
		took          time.Duration
		maxConcurrent int
		// lastStart bounds when the last turn started after the first.
		lastStartMin, lastStartMax time.Duration
	}{
		{"quick turns wait for a running one to end", 20 * time.Millisecond, maxRunning, 15 * time.Millisecond, 180 * time.Millisecond},
		{"hanging turns are waited for a slot at most", 500 * time.Millisecond, replicas, 190 * time.Millisecond, 300 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var (
				mu            sync.Mutex
				running, most int
				first, last   time.Time
			)
			sc := newSchedule(interval, newWorkers(ctx), func(ctx context.Context, s *replicaState) {
				mu.Lock()
				now := time.Now()
				if first.IsZero() {
					first = now
				}
				last = now
				running++
				most = max(most, running)
				mu.Unlock()
				time.Sleep(tt.took)
				mu.Lock()
				running--
				mu.Unlock()
			})
			go sc.loop(ctx)
			at := time.Now()
			for i := range replicas {
				sc.add(ctx, &replicaState{target: Target{Replica: fmt.Sprint(i)}}, at)
			}
			time.Sleep(800 * time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			if most != tt.maxConcurrent {
				t.Errorf("at most %d turns ran at once, want %d", most, tt.maxConcurrent)
			}
			if d := last.Sub(first); d < tt.lastStartMin || d > tt.lastStartMax {
				t.Errorf("the last turn started %s after the first, want %s to %s", d, tt.lastStartMin, tt.lastStartMax)
			}
		})
	}
}

func TestAReplicasFirstTurnIsOnTheSlotGrid(t *testing.T) {
	sc := newSchedule(15*time.Second, nil, nil)
	if sc.slot != time.Second {
		t.Fatalf("slot %s at a 15 s interval, want 1s", sc.slot)
	}
	at := time.Date(2026, 12, 1, 12, 0, 7, 250_000_000, time.UTC)
	sc.add(context.Background(), &replicaState{}, at)
	if got, want := sc.turns[0].due, at.Truncate(time.Second).Add(time.Second); !got.Equal(want) {
		t.Errorf("first turn due %s, want %s", got, want)
	}
	if got := slotOf(200 * time.Millisecond); got != 20*time.Millisecond {
		t.Errorf("slot %s at a 200 ms interval, want 20ms", got)
	}
}
