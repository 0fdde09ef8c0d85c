package workload

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReadTraceFileReadsEachFormat(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name  string
		path  string
		timed bool
		want  []Record
	}{
		{
			name: "JSONL with RFC 3339 timestamps and ignored extra keys", path: "testdata/trace.jsonl", timed: true,
			want: []Record{{812, 95, 0}, {120, 240, 250 * ms}, {2048, 12, 1500 * ms}, {64, 0, 2000 * ms}},
		},
		{
			name: "JSONL with timestamps in seconds", path: "testdata/trace-seconds.jsonl", timed: true,
			want: []Record{{100, 10, 0}, {200, 20, 500 * ms}, {300, 30, 2500 * ms}},
		},
		{
			name: "JSONL without timestamps", path: "testdata/untimed.jsonl",
			want: []Record{{10, 5, 0}, {20, 15, 0}},
		},
		{
			name: "Azure LLM inference trace CSV", path: "testdata/azure.csv", timed: true,
			want: []Record{
				{374, 44, 0}, {396, 109, 4314579 * time.Microsecond}, {879, 20, 4737848 * time.Microsecond},
				{91, 11, 6903782 * time.Microsecond}, {91, 0, 10440421 * time.Microsecond}, {4808, 10, 13319410 * time.Microsecond},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := ReadTraceFile(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Timed != tt.timed {
				t.Errorf("Timed = %v, want %v", tr.Timed, tt.timed)
			}
			if diff := cmp.Diff(tt.want, tr.Records); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
	}
}

// Every invalid fixture gets an error naming the file, line and field.
func TestInvalidWorkloadFilesAreRejectedWithTheirLocation(t *testing.T) {
	want := map[string]string{
		"invalid-backwards.jsonl":         "testdata/invalid-backwards.jsonl:2: timestamp: 1970-01-01T00:00:09Z is earlier than the previous record's 1970-01-01T00:00:10Z (records must be in arrival order)",
		"invalid-bad-timestamp.jsonl":     `testdata/invalid-bad-timestamp.jsonl:1: timestamp: want RFC 3339 text (2024-05-10T12:00:00Z) or seconds, got "yesterday"`,
		"invalid-columns.csv":             "testdata/invalid-columns.csv:2: want 3 columns like the header, got 2",
		"invalid-empty.jsonl":             "testdata/invalid-empty.jsonl: trace has no records",
		"invalid-field-for-kind.yaml":     "testdata/invalid-field-for-kind.yaml: line 6: prompt.median: does not apply to kind uniform",
		"invalid-fractional-prompt.jsonl": "testdata/invalid-fractional-prompt.jsonl:1: prompt_tokens: want a whole number ≥ 1, got 12.5",
		"invalid-huge-output.csv":         "testdata/invalid-huge-output.csv:2: GeneratedTokens: 20000000 tokens is longer than any model's context (at most 10000000)",
		"invalid-huge-prompt.jsonl":       "testdata/invalid-huge-prompt.jsonl:2: prompt_tokens: 1000000000000 tokens is longer than any model's context (at most 10000000)",
		"invalid-header.csv":              "testdata/invalid-header.csv:1: header has no ContextTokens column: want TIMESTAMP,ContextTokens,GeneratedTokens, got TIMESTAMP,PromptTokens,GeneratedTokens",
		"invalid-kind.yaml":               `testdata/invalid-kind.yaml: line 2: prompt.kind: unknown kind "normal": want fixed, uniform or lognormal`,
		"invalid-median.yaml":             "testdata/invalid-median.yaml: line 4: prompt.median: must be a finite number of tokens ≥ 1, got 0",
		"invalid-missing-output.jsonl":    "testdata/invalid-missing-output.jsonl:2: output_tokens: missing",
		"invalid-missing-output.yaml":     "testdata/invalid-missing-output.yaml: output: is required",
		"invalid-mixed-timestamps.jsonl":  "testdata/invalid-mixed-timestamps.jsonl:2: timestamp: missing, but earlier records have one",
		"invalid-not-object.jsonl":        `testdata/invalid-not-object.jsonl:3: want a JSON object like {"prompt_tokens":N,"output_tokens":M}, got [1, 2]`,
		"invalid-timestamp.csv":           `testdata/invalid-timestamp.csv:3: TIMESTAMP: want e.g. 2023-11-16 18:15:46.6805900, got "16/11/2023 18:15"`,
		"invalid-tokens.csv":              `testdata/invalid-tokens.csv:3: ContextTokens: want a whole number ≥ 1, got "0"`,
		"invalid-type.yaml":               "testdata/invalid-type.yaml: line 2: prompt: cannot unmarshal !!str `lots` into int",
		"invalid-uniform-range.yaml":      "testdata/invalid-uniform-range.yaml: line 6: output.max: must be at least min (400), got 50",
		"invalid-unknown-key.yaml":        "testdata/invalid-unknown-key.yaml: line 7: output.vaule: unknown key \"vaule\" (did you mean \"value\"?); the keys here are kind, max, median, min, sigma, value",
	}
	files, err := filepath.Glob("testdata/invalid-*")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(want) {
		t.Errorf("%d invalid fixtures on disk, %d in this table: keep them in step", len(files), len(want))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			w, ok := want[filepath.Base(f)]
			if !ok {
				t.Fatalf("no expected error for %s", f)
			}
			_, err := Resolve(f, 1)
			if err == nil || err.Error() != w {
				t.Errorf("Resolve(%s) error:\n got: %v\nwant: %s", f, err, w)
			}
		})
	}
}

func TestJSONLRejectsOverlongLines(t *testing.T) {
	long := `{"prompt_tokens": 1, "output_tokens": 1, "text": "` + strings.Repeat("x", maxLine) + `"}`
	_, err := ReadJSONL(strings.NewReader(long), "big.jsonl")
	if err == nil || !strings.Contains(err.Error(), "big.jsonl:1: line longer than") {
		t.Errorf("got %v, want a line-too-long error at big.jsonl:1", err)
	}
}

// A trace's lengths' spread, for the profile's noise band: prompts 100 and
// 300 in equal parts have a mean of 200 and a standard deviation of 100;
// outputs of 0 count as the 1 token they are replayed as.
func TestATraceKnowsItsLengthsSpread(t *testing.T) {
	tr := Trace{Source: "t.jsonl", Records: []Record{
		{PromptTokens: 100, OutputTokens: 0}, {PromptTokens: 300, OutputTokens: 3},
	}}
	if got := tr.PromptTokensCV(); got != 0.5 {
		t.Errorf("prompt CV %g, want 0.5", got)
	}
	if got := tr.OutputTokensCV(); got != 0.5 {
		t.Errorf("output CV %g, want 0.5 (outputs 1 and 3)", got)
	}
	g, err := NewTraceGenerator(tr)
	if err != nil {
		t.Fatal(err)
	}
	if info := g.Info(); info.PromptTokensCV != 0.5 || info.OutputTokensCV != 0.5 {
		t.Errorf("generator info CVs %g / %g, want 0.5 / 0.5", info.PromptTokensCV, info.OutputTokensCV)
	}
	if got := LengthCV(nil); got != 0 {
		t.Errorf("no lengths: CV %g, want 0", got)
	}
}
