package watch

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kneewatch/kneewatch/collector"
)

// TestTheDetectedEngineIsExportedAndLoggedOnce: an auto-detected engine is
// on kneewatch_replica_info from the first good scrape, logged when first
// seen and when it changes, never on every round, and kept through a
// failed scrape.
func TestTheDetectedEngineIsExportedAndLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	clock := fixtureTime
	w := NewWatcher(WatcherOptions{Interval: 5 * time.Second, Window: time.Minute, Now: func() time.Time { return clock },
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := w.SetTargets([]Target{{Replica: "r0", MetricsURL: "http://r0/metrics"}}); err != nil {
		t.Fatal(err)
	}
	vllm := normalizeText(t, readFixture(t, "vllm-v1-full-synthetic.prom"), collector.Options{})
	sglang := normalizeText(t, readFixture(t, "sglang-current-synthetic.prom"), collector.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewExporter(w.Latest))
	info := func() string {
		var b strings.Builder
		for _, l := range strings.Split(mustGather(t, reg), "\n") {
			if strings.HasPrefix(l, "kneewatch_replica_info{") {
				b.WriteString(l[strings.Index(l, "engine="):strings.Index(l, ",")] + ";")
			}
		}
		return b.String()
	}
	for i, step := range []struct {
		snap     *collector.Snapshot
		wantInfo string
	}{
		{&vllm, `engine="vllm";`}, {&vllm, `engine="vllm";`}, {nil, `engine="vllm";`}, {&sglang, `engine="sglang";`}, {&sglang, `engine="sglang";`},
	} {
		clock = clock.Add(5 * time.Second)
		sc := ReplayScrape{Replica: "r0", EngineErr: errNotReplayed}
		if step.snap != nil {
			s := *step.snap
			s.Time = clock
			sc = ReplayScrape{Replica: "r0", Engine: s}
		}
		if _, err := w.Replay([]ReplayScrape{sc}); err != nil {
			t.Fatal(err)
		}
		if got := info(); got != step.wantInfo {
			t.Errorf("round %d: replica info %s, want %s", i, got, step.wantInfo)
		}
	}
	out := logs.String()
	if n := strings.Count(out, `msg="engine detected"`); n != 1 || !strings.Contains(out, `msg="engine detected" replica=r0 engine=vllm configured=false`) {
		t.Errorf("want one 'engine detected' line for vllm:\n%s", out)
	}
	if n := strings.Count(out, `msg="engine changed"`); n != 1 || !strings.Contains(out, `msg="engine changed" replica=r0 from=vllm to=sglang`) {
		t.Errorf("want one 'engine changed' line from vllm to sglang:\n%s", out)
	}
}

func mustGather(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	var b strings.Builder
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			b.WriteString(f.GetName() + "{")
			for _, l := range m.GetLabel() {
				b.WriteString(l.GetName() + "=\"" + l.GetValue() + "\",")
			}
			b.WriteString("}\n")
		}
	}
	return b.String()
}
