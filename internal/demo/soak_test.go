package demo

import (
	"bytes"
	"context"
	"fmt"
	"github.com/kneewatch/kneewatch/watch"
	"math"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// soakTolerance is how far from the truth a headroom exported during the
// soak may read (issue 14).
const soakTolerance = 0.15

// soakFault is one fault the soak injects, as POST /admin/faults takes it.
type soakFault struct {
	kind  string
	set   string // the JSON patch that starts it
	clear string // the JSON patch that ends it (empty for an action)
	// changesCapacity marks faults under which the replica's true headroom
	// is not the steady one (a stalled or throttled GPU), so its readings
	// are not held to the truth while the fault lasts and for a window
	// after. A restart empties the replica, which then refills.
	changesCapacity bool
}

var soakFaults = []soakFault{
	{"restart", `{"restart":true}`, "", true},
	{"metrics_down", `{"metrics_down":true}`, `{"metrics_down":false}`, false},
	{"metrics_malformed", `{"metrics_malformed":true}`, `{"metrics_malformed":false}`, false},
	{"stall", `{"stall":"forever"}`, `{"stall":""}`, true},
	{"slowdown", `{"slowdown":2}`, `{"slowdown":1}`, true},
}

// TestSoak runs the demo fleet under steady load with a watcher for
// KNEEWATCH_SOAK (a duration, e.g. 30m; `make soak` sets it), rotating
// faults through the replicas over the simulator's /admin/faults API:
// restart, metrics_down, metrics_malformed, stall and slowdown, each for
// 20 s of every 40. It checks that nothing panics, that goroutines and
// memory do not grow, and that every exported headroom is within 0.15 of
// the truth or absent with a reason.
func TestSoak(t *testing.T) {
	v := os.Getenv("KNEEWATCH_SOAK")
	if v == "" {
		t.Skip("set KNEEWATCH_SOAK to a duration (make soak) to run the soak")
	}
	duration, err := time.ParseDuration(v)
	if err != nil || duration < 2*time.Minute {
		t.Fatalf("KNEEWATCH_SOAK=%q: want a duration of at least 2m", v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Loads well below the knee keep the simulator's own CPU modest, so a
	// busy machine slows it less (a starved simulator delivers less than its
	// profile, which the watcher rightly reads as lost headroom).
	fleet, err := Start(ctx, Options{Loads: []Load{{"idle", 0}, {"quarter", 0.25}, {"half", 0.5}}})
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	opts := watch.WatcherOptions{Interval: 2 * time.Second, Window: 30 * time.Second, TargetHeadroom: 0.2}
	watch := startWatching(ctx, t, fleet, opts)
	defer watch.stop()
	truth := map[string]float64{}
	for _, r := range fleet.Replicas {
		truth[r.Name] = r.TrueHeadroom
	}
	t.Logf("true knee %.0f; replicas held at %v; soak of %s", fleet.Profile.Knee.Concurrency, concurrencies(fleet), duration)

	const (
		warm     = time.Minute      // before the first fault and the baseline
		period   = 40 * time.Second // one fault per period
		faultFor = 20 * time.Second
	)
	settle := opts.Window + 2*opts.Interval // a fault's after-effects leave the window
	start := time.Now()
	for time.Since(start) < warm {
		time.Sleep(opts.Interval / 10)
		watch.poll(t)
	}
	base := measure()
	t.Logf("start (after %s of warm-up): %s", warm, base)

	type excuse struct{ from, until time.Time }
	excused := map[string][]excuse{}
	injected := map[string]int{}
	var samples []usage
	var active *soakFault
	var victim Replica
	var faultStart time.Time
	next := time.Now()
	i := 0
	for time.Since(start) < warm+duration {
		now := time.Now()
		if active != nil && now.Sub(faultStart) >= faultFor {
			if active.clear != "" {
				postFaults(t, victim, active.clear)
			}
			if active.changesCapacity {
				excused[victim.Name] = append(excused[victim.Name], excuse{faultStart, now.Add(settle)})
			}
			active = nil
		}
		if active == nil && !now.Before(next) && time.Since(start) < warm+duration-settle {
			f := soakFaults[i%len(soakFaults)]
			victim = fleet.Replicas[(i/len(soakFaults)+i)%len(fleet.Replicas)]
			i++
			postFaults(t, victim, f.set)
			active, faultStart, next = &f, now, now.Add(period)
			injected[f.kind]++
			if f.changesCapacity {
				excused[victim.Name] = append(excused[victim.Name], excuse{now, now.Add(faultFor + settle)})
			}
			samples = append(samples, measure())
		}
		time.Sleep(opts.Interval / 10)
		watch.poll(t)
	}
	if active != nil && active.clear != "" {
		postFaults(t, victim, active.clear)
	}
	end := measure()
	t.Logf("end: %s", end)
	watch.stop()

	isExcused := func(e eval) bool {
		for _, x := range excused[e.replica] {
			if !e.at.Before(x.from) && e.at.Before(x.until) {
				return true
			}
		}
		return false
	}
	var checked, absent, excusedN int
	reasons := map[string]int{}
	sum, count := map[string]float64{}, map[string]int{}
	worst, worstAt := 0.0, ""
	for _, e := range watch.evals {
		if e.at.Sub(start) < warm {
			continue
		}
		switch {
		case math.IsNaN(e.headroom):
			absent++
			reasons[e.reason]++
			if e.reason == "" {
				t.Errorf("%s at %.0f s: no headroom and no reason", e.replica, e.at.Sub(start).Seconds())
			}
		case isExcused(e):
			excusedN++
		default:
			checked++
			sum[e.replica] += e.headroom
			count[e.replica]++
			d := e.headroom - truth[e.replica]
			if math.Abs(d) > math.Abs(worst) {
				worst, worstAt = d, fmt.Sprintf("%s at %.0f s", e.replica, e.at.Sub(start).Seconds())
			}
			if math.Abs(d) > soakTolerance {
				t.Errorf("%s at %.0f s: headroom %+.3f, truth %+.3f (%s)", e.replica, e.at.Sub(start).Seconds(), e.headroom, truth[e.replica], e.detail)
			}
		}
	}
	t.Logf("faults injected: %v; evaluations after warm-up: %d held to the truth, %d during or after a capacity fault, %d absent (reasons %v); worst headroom − truth %+.3f (%s)",
		injected, checked, excusedN, absent, reasons, worst, worstAt)
	for _, r := range fleet.Replicas {
		if n := count[r.Name]; n > 0 {
			t.Logf("%s (%s): mean headroom held to the truth %+.3f over %d evaluations, truth %+.3f", r.Name, r.Load.Name, sum[r.Name]/float64(n), n, r.TrueHeadroom)
		}
	}
	for j, s := range samples {
		if j%max(1, len(samples)/8) == 0 {
			t.Logf("at fault %d: %s", j, s)
		}
	}
	if checked == 0 {
		t.Error("no evaluation was held to the truth")
	}
	// Growth: the watcher and the fleet with its load generators run in
	// this process, measured alike at the start and at the end, each fault
	// cleared a settling time before.
	if end.goroutines > base.goroutines+8 {
		t.Errorf("goroutines grew from %d to %d", base.goroutines, end.goroutines)
	}
	if end.heap > base.heap*3/2+16<<20 {
		t.Errorf("heap in use grew from %d to %d bytes", base.heap, end.heap)
	}
	if end.rss > base.rss*3/2+64<<20 {
		t.Errorf("RSS grew from %d to %d bytes", base.rss, end.rss)
	}
}

func postFaults(t *testing.T, r Replica, patch string) {
	t.Helper()
	resp, err := http.Post(r.URL+"/admin/faults", "application/json", strings.NewReader(patch))
	if err != nil {
		t.Fatalf("%s: POST /admin/faults %s: %v", r.Name, patch, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: POST /admin/faults %s: %s", r.Name, patch, resp.Status)
	}
}

// usage is the process's goroutines and memory at one moment.
type usage struct {
	goroutines int
	heap, rss  uint64
}

func (u usage) String() string {
	return fmt.Sprintf("%d goroutines, heap in use %.1f MiB, RSS %.1f MiB", u.goroutines, float64(u.heap)/(1<<20), float64(u.rss)/(1<<20))
}

// measure collects garbage first, so the heap is what is live.
func measure() usage {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return usage{goroutines: runtime.NumGoroutine(), heap: m.HeapInuse, rss: residentBytes()}
}

// residentBytes is VmRSS from /proc/self/status (0 where there is none).
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := strings.Fields(string(rest))
			if len(f) == 2 && f[1] == "kB" {
				n, _ := strconv.ParseUint(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}
