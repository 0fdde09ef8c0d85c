package probe

import (
	"bytes"
	"context"
	"flag"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/internal/testtools"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixedRunner is a runner whose replicas have a fixed history at t0 + 1 min:
// "vllm-0" (knee 2000 tok/s, SLO 200 ms / 20 ms) had three good probes, a
// slow one, a 500 and a skip; "no-knee" has no knee, so it was only skipped.
func fixedRunner(t *testing.T) *Runner {
	t.Helper()
	p := fastProbes()
	p.Interval, p.Timeout = 30_000_000_000, 10_000_000_000 // 30 s, 10 s
	p.MaxTokens, p.LoadRatioCap = 16, 0.001
	r, err := New(Options{Probes: p, Window: time.Minute, Now: func() time.Time { return t0.Add(time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	err = r.SetTargets([]Target{
		{Replica: "vllm-0", Model: "llama", BaseURL: "http://vllm-0.invalid:8000/v1", KneeOutputTokensPerSecond: 2000,
			SLOTTFT: 200 * time.Millisecond, SLOTPOT: 20 * time.Millisecond},
		{Replica: "no-knee", Model: "qwen", BaseURL: "http://no-knee.invalid:8000/v1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := r.replicas["vllm-0"]
	for i, res := range []Result{
		ok(40*time.Millisecond, 8*time.Millisecond), ok(200*time.Millisecond, 20*time.Millisecond),
		ok(60*time.Millisecond, 9*time.Millisecond), ok(2*time.Second, 150*time.Millisecond), fail(ClassHTTP5xx),
	} {
		at := t0.Add(time.Duration(i) * 12 * time.Second)
		id, ok := s.reserve(at, 16, 0.001, r.Window())
		if !ok {
			t.Fatalf("probe %d over budget", i)
		}
		s.finish(id, res, at.Add(time.Second))
	}
	s.skip(ReasonPastKnee)
	nk := r.replicas["no-knee"]
	if _, ok := nk.reserve(t0, 16, 0.001, r.Window()); ok {
		t.Fatal("a replica without a knee got a budget")
	}
	return r
}

func TestTheProbeExpositionMatchesTheGoldenFile(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(fixedRunner(t))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	golden := filepath.Join("testdata", "exposition.prom")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got := buf.String(); got != string(want) {
		t.Errorf("exposition differs from %s (run with -update if intended):\n%s", golden, got)
	}
	for _, d := range catalog.ProbeCatalog {
		if !strings.Contains(buf.String(), "# TYPE "+d.Name+" "+string(d.Type)) {
			t.Errorf("exposition lacks %s (%s)", d.Name, d.Type)
		}
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", err, problems)
	}

	promtool := testtools.Path(t, "promtool")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(buf.Bytes())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestProbeSeriesCarryTheirModelFromTheStart: a target that names no model
// exports no probe series until the watcher has seen the replica, and then
// exports them under the engine's model, never first under model="".
func TestProbeSeriesCarryTheirModelFromTheStart(t *testing.T) {
	p := fastProbes()
	p.Interval, p.Timeout = config.Duration(time.Hour), config.Duration(time.Minute) // no probe is sent during the test
	r, err := New(Options{Probes: p, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetTargets([]Target{{Replica: "vllm-0", BaseURL: "http://vllm-0.invalid:8000/v1", KneeOutputTokensPerSecond: 2000}}); err != nil {
		t.Fatal(err)
	}
	var seen atomic.Bool
	state := func(string) (ReplicaState, bool) {
		if !seen.Load() {
			return ReplicaState{}, false
		}
		return ReplicaState{Model: "meta-llama/Llama-3.1-8B-Instruct", Headroom: math.NaN(), QueueGrowthPerSecond: math.NaN(), Waiting: math.NaN()}, true
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, state) }()
	defer func() { cancel(); <-done }()
	for r.stateFunc() == nil {
		time.Sleep(time.Millisecond)
	}
	models := func() map[string]bool {
		out := map[string]bool{}
		reg := prometheus.NewRegistry()
		reg.MustRegister(r)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "model" {
						out[l.GetValue()] = true
					}
				}
			}
		}
		return out
	}
	if got := models(); len(got) != 0 {
		t.Fatalf("before the watcher saw the replica, probe series with models %v, want none", got)
	}
	seen.Store(true)
	for range 3 {
		if got := models(); len(got) != 1 || !got["meta-llama/Llama-3.1-8B-Instruct"] {
			t.Fatalf("after the watcher saw the replica, models %v, want only the engine's", got)
		}
	}
}
