package watch

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/internal/testtools"
	"github.com/kneewatch/kneewatch/knee"
)

// TestAMissingPromptHistogramIsLoggedOncePerReplica: a profile that records
// its prompt tail is read against the engine's prompt-length histogram. An
// SGLang replica started without --collect-tokens-histogram has none, and
// the knee then moves with the mean prompt only; the on-call is told once,
// with the flag that turns it on. A vLLM replica exports it and is not
// warned about, nor is a replica whose profile has no tail to compare.
func TestAMissingPromptHistogramIsLoggedOncePerReplica(t *testing.T) {
	withTail, err := knee.Load(filepath.Join(testtools.ModuleRoot(), "knee", "testdata", "valid-mix.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	withTail.Workload.P999PromptTokens = 4 * withTail.Workload.MeanPromptTokens
	noTail := *withTail
	noTail.Workload.P999PromptTokens = 0

	var logs bytes.Buffer
	clock := fixtureTime
	w := NewWatcher(WatcherOptions{Interval: 5 * time.Second, Window: time.Minute, Now: func() time.Time { return clock },
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := w.SetTargets([]Target{
		{Replica: "sglang-tail", ProfileName: "p", Profile: withTail, MetricsURL: "http://a/metrics"},
		{Replica: "vllm-tail", ProfileName: "p", Profile: withTail, MetricsURL: "http://b/metrics"},
		{Replica: "sglang-no-tail", ProfileName: "p", Profile: &noTail, MetricsURL: "http://c/metrics"},
	}); err != nil {
		t.Fatal(err)
	}
	sglang := normalizeText(t, readFixture(t, "sglang-current-synthetic.prom"), collector.Options{})
	vllm := normalizeText(t, readFixture(t, "vllm-v1-full-synthetic.prom"), collector.Options{})
	if _, ok := vllm.Histogram(collector.SignalPromptLength); !ok {
		t.Fatal("the vLLM fixture has no prompt-length histogram: the test needs one")
	}
	for range 3 {
		clock = clock.Add(5 * time.Second)
		var round []ReplayScrape
		for replica, snap := range map[string]collector.Snapshot{"sglang-tail": sglang, "vllm-tail": vllm, "sglang-no-tail": sglang} {
			snap.Time = clock
			round = append(round, ReplayScrape{Replica: replica, Engine: snap})
		}
		if _, err := w.Replay(round); err != nil {
			t.Fatal(err)
		}
	}
	out := logs.String()
	const msg = `msg="no prompt-length histogram`
	if n := strings.Count(out, msg); n != 1 {
		t.Fatalf("%d warnings about the prompt-length histogram, want 1 (sglang-tail's):\n%s", n, out)
	}
	line := out[strings.Index(out, msg):]
	line = line[:strings.IndexByte(line, '\n')]
	for _, want := range []string{"replica=sglang-tail", "engine=sglang", "--collect-tokens-histogram", "sglang:prompt_tokens_histogram"} {
		if !strings.Contains(line, want) {
			t.Errorf("the warning does not name %s:\n%s", want, line)
		}
	}
}
