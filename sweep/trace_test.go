package sweep

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/workload"
)

// tokens is one request's prompt and output length.
type tokens struct{ Prompt, Output int }

// TestTraceReplayTokenCountsMatchTheTrace replays each checked-in trace
// against the simulator through the sweep's level runner and checks that
// the token counts the server reports in usage are the trace's, record by
// record and in order. A record with 0 output tokens is replayed as 1 (a
// request must produce something).
func TestTraceReplayTokenCountsMatchTheTrace(t *testing.T) {
	st := startSim(t, "llama-3.1-8b-h100", 1000)
	for _, path := range []string{"testdata/trace.jsonl", "testdata/trace.csv"} {
		t.Run(path, func(t *testing.T) {
			trace, err := workload.ReadTraceFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var want []tokens
			for _, r := range trace.Records {
				want = append(want, tokens{r.PromptTokens, max(r.OutputTokens, 1)})
			}
			gen, err := workload.Resolve(path, 1)
			if err != nil {
				t.Fatal(err)
			}
			cfg := &Config{Workload: gen}
			n := len(trace.Records)
			// One worker keeps the order; the warm-up is the trace's first
			// pass, the window its second (the replay cycles).
			lv, err := RunLevel(context.Background(), st.client(2), LevelConfig{
				Concurrency: 1, Warmup: n, Window: n, Next: cfg.nextFunc(1),
				SLO: knee.SLO{TTFT: knee.Duration(1e9), TPOT: knee.Duration(1e9), Quantile: 0.99},
			})
			if err != nil {
				t.Fatal(err)
			}
			var got, asked []tokens
			for _, r := range lv.Results {
				if r.Err != nil {
					t.Fatalf("request failed: %v", r.Err)
				}
				got = append(got, tokens{r.PromptTokens, r.OutputTokens})
				asked = append(asked, tokens{r.Request.PromptTokens, r.Request.MaxTokens})
			}
			if diff := cmp.Diff(want, asked); diff != "" {
				t.Errorf("requests sent differ from the trace (-trace +sent):\n%s", diff)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("usage reported by the server differs from the trace (-trace +usage):\n%s", diff)
			}
			if lv.PromptMismatch != 0 || lv.OutputShort != 0 {
				t.Errorf("%d prompt mismatches, %d short outputs; want none", lv.PromptMismatch, lv.OutputShort)
			}
		})
	}
}
