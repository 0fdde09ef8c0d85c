package knee

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kneewatch/kneewatch/strictyaml"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestLoadRejectsEachInvalidFixtureWithItsExactError(t *testing.T) {
	tests := []struct {
		file string
		want string
	}{
		{"invalid-api-version.yaml", `line 2: apiVersion: must be "kneewatch.dev/v1", got "kneewatch.dev/v0"`},
		{"invalid-kind.yaml", `line 3: kind: must be "KneeProfile", got "Profile"`},
		{"invalid-missing-model.yaml", `line 7: match.model: required: the served model name this profile describes`},
		{"invalid-slo-ttft.yaml", `line 13: slo.ttft: must be > 0, got 0s`},
		{"invalid-slo-tpot.yaml", `line 14: slo.tpot: must be > 0, got -50ms`},
		{"invalid-slo-quantile.yaml", `line 15: slo.quantile: must be in (0,1), got 1.5`},
		{"invalid-duration.yaml", `line 13: slo.ttft: invalid duration "500" (want e.g. 500ms, 1.5s)`},
		{"invalid-unknown-field.yaml", `line 10: match.modle: unknown key "modle" (did you mean "model"?); the keys here are engine, engineVersion, gpu, model`},
		{"invalid-wrong-type.yaml", "line 68: points[2].concurrency: cannot unmarshal !!str `four` into float64"},
		{"invalid-duplicate-key.yaml", `line 15: slo.ttft: mapping key "ttft" already defined at line 13`},
		{"invalid-syntax.yaml", `line 10: found unexpected end of stream`},
		{"invalid-empty.yaml", `empty document, want a knee profile`},
		{"invalid-two-documents.yaml", `line 186: a second YAML document, want exactly one knee profile`},
		{"invalid-workload-kind.yaml", `line 19: workload.prompt.kind: unknown kind "gamma": want fixed, uniform or lognormal`},
		{"invalid-workload-dist.yaml", `line 26: workload.output.median: must be a finite number of tokens ≥ 1, got 0`},
		{"invalid-workload-mean.yaml", `line 31: workload.meanPromptTokens: must be a finite number ≥ 0, got -246`},
		{"invalid-workload-tail.yaml", `line 32: workload.p999PromptTokens: must be a finite number ≥ 0, got -900`},
		{"invalid-workload-cv.yaml", `line 33: workload.outputTokensCV: must be a finite number ≥ 0, got -0.5`},
		{"invalid-sweep-levels.yaml", `line 38: sweep.levels[0]: must be > 0, got 0`},
		{"invalid-no-points.yaml", `line 39: points: at least one sweep point is required`},
		{"invalid-point-concurrency.yaml", `line 40: points[0].concurrency: must be > 0, got 0`},
		{"invalid-points-unsorted.yaml", `line 96: points[4].concurrency: points must be sorted by concurrency, got 3 after 8`},
		{"invalid-points-duplicate.yaml", `line 96: points[4].concurrency: duplicate concurrency 8 (also points[3])`},
		{"invalid-point-requests.yaml", `line 83: points[3].requests: must be ≥ 0, got -320`},
		{"invalid-point-negative.yaml", `line 149: points[7].waiting: must be a finite number ≥ 0, got -0.8`},
		{"invalid-point-nan.yaml", `line 99: points[4].outputTokensPerSecond: must be a finite number ≥ 0, got NaN`},
		{"invalid-point-ratio.yaml", `line 173: points[9].kvCacheUsage: must be a ratio in [0,1], got 1.21`},
		{"invalid-point-quantiles.yaml", `line 171: points[9].ttftSeconds: p50 (0.9) must not exceed p99 (0.81)`},
		{"invalid-point-goodput.yaml", `line 44: points[0].goodputTokensPerSecond: must not exceed outputTokensPerSecond (195), got 295`},
		{"invalid-knee-concurrency.yaml", `line 181: knee.concurrency: must be > 0, got 0`},
		{"invalid-knee-outside-points.yaml", `line 181: knee.concurrency: must equal a sweep point's concurrency or lie between two (1..128), got 200`},
		{"invalid-knee-throughput.yaml", `line 182: knee.outputTokensPerSecond: must be > 0, got 0`},
		{"invalid-knee-resource.yaml", `line 185: knee.limitingResource: must be one of compute, kv_cache, got "memory"`},
		{"invalid-knee-arrivals.yaml", `line 186: knee.arrivals: must be "closed-loop" or "poisson", got "open"`},
		{"invalid-knee-poisson-rate.yaml", `line 180: knee.requestsPerSecond: must be > 0, got 0`},
		{"invalid-mix-too-few-points.yaml", `line 188: mixModel.points: needs knees at 4 or more mixes, got 3`},
		{"invalid-mix-point-mean.yaml", `line 204: mixModel.points[2].meanOutputTokens: must be > 0, got 0`},
		{"invalid-mix-design.yaml", `line 188: mixModel.points: a mix model needs knees at two or more mean prompt lengths and two or more mean output lengths`},
		{"invalid-mix-rises.yaml", `line 230: mixModel.points[6].requestsPerSecond: the knee rises with more work: ` +
			`8.9 requests/s at 984 prompt / 205 output tokens, above the 5 of points[3] at 492 / 205`},
		{"invalid-mix-coefficient-nan.yaml", `line 243: mixModel.concurrency.output: must be a finite number, got NaN`},
		{"invalid-mix-rate-prompt.yaml", `line 244: mixModel.requestsPerSecond.prompt: must be < 0: ` +
			`longer prompts cannot raise the request rate a knee sustains, got 0.5`},
		{"invalid-mix-nominal.yaml", `line 243: mixModel.concurrency.atProfileMix: does not reproduce the profile's knee: ` +
			`56, knee.concurrency is 112 (50% off, at most 20% allowed)`},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			p, err := Load(path)
			if err == nil {
				t.Fatalf("Load(%s) = %+v, want error %q", path, p, tt.want)
			}
			if got, want := err.Error(), path+": "+tt.want; got != want {
				t.Errorf("Load(%s) error\n got: %s\nwant: %s", path, got, want)
			}
		})
	}
	files, err := filepath.Glob("testdata/invalid-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("fixture %s has no expected error in this table", f)
		}
	}
}

func TestLoadAcceptsTheValidFixture(t *testing.T) {
	p, err := Load("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Knee{Concurrency: 112, OutputTokensPerSecond: 12180, GoodputTokensPerSecond: 12010, KVCacheUsage: 0.108, LimitingResource: ResourceCompute}
	if diff := cmp.Diff(want, p.Knee); diff != "" {
		t.Errorf("knee (-want +got):\n%s", diff)
	}
	if got := len(p.Points); got != 10 {
		t.Errorf("points = %d, want 10", got)
	}
	wantSLO := SLO{TTFT: Duration(500 * time.Millisecond), TPOT: Duration(50 * time.Millisecond), Quantile: 0.99}
	if diff := cmp.Diff(wantSLO, p.SLO); diff != "" {
		t.Errorf("slo (-want +got):\n%s", diff)
	}
	if p.Workload.Name != "chat" || p.Workload.Prompt.Kind != "lognormal" || p.Workload.MeanOutputTokens != 205 {
		t.Errorf("workload = %+v, want the chat lognormal mix with mean output 205", p.Workload)
	}
	if p.Points[0].GPUUtilization == nil || *p.Points[0].GPUUtilization != 0.35 {
		t.Errorf("points[0].gpuUtilization = %v, want 0.35", p.Points[0].GPUUtilization)
	}
}

func TestLoadNamesAMissingFile(t *testing.T) {
	_, err := Load("testdata/no-such-profile.yaml")
	if err == nil || !strings.Contains(err.Error(), "testdata/no-such-profile.yaml") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) error = %v, want a not-exist error naming the file", err)
	}
}

func TestSaveThenParseGivesTheSameProfile(t *testing.T) {
	p, err := Load("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(data, "saved.yaml")
	if err != nil {
		t.Fatalf("Parse(Marshal(p)): %v\n%s", err, data)
	}
	if diff := cmp.Diff(p, back); diff != "" {
		t.Errorf("round trip changed the profile (-before +after):\n%s", diff)
	}
}

func TestSaveWritesTheGoldenProfile(t *testing.T) {
	p, err := Load("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := p.Save(&buf); err != nil {
		t.Fatal(err)
	}
	golden := "testdata/saved.golden.yaml"
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./knee -run TestSaveWritesTheGoldenProfile -update)", err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("Save output differs from %s (-want +got):\n%s", golden, diff)
	}
}

func TestParseListsEveryBadFieldWithItsLine(t *testing.T) {
	data, err := os.ReadFile("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(data), "quantile: 0.99", "quantile: 0", 1)
	bad = strings.Replace(bad, "limitingResource: compute", "limitingResource: disk", 1)
	_, err = Parse([]byte(bad), "two.yaml")
	want := "two.yaml: line 16: slo.quantile: must be in (0,1), got 0\n" +
		`two.yaml: line 186: knee.limitingResource: must be one of compute, kv_cache, got "disk"`
	if err == nil || err.Error() != want {
		t.Errorf("Parse error\n got: %v\nwant: %s", err, want)
	}
	var verr *strictyaml.List
	if !errors.As(err, &verr) || len(verr.Errors) != 2 || verr.Errors[1].Field != "knee.limitingResource" || verr.Errors[1].Line != 186 {
		t.Errorf("error is not a *strictyaml.List with both fields and lines: %#v", err)
	}
}

func TestValidateOnAProfileBuiltInCodeNamesOnlyTheField(t *testing.T) {
	p, err := Load("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.SLO.Quantile = 1.5
	err = p.Validate()
	if want := "slo.quantile: must be in (0,1), got 1.5"; err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want %q", err, want)
	}
}

func TestValidateAcceptsAKneeBetweenPointsAndATraceWorkload(t *testing.T) {
	p, err := Load("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Knee.Concurrency = 104.5 // interpolated between the points at 96 and 112
	p.Workload = WorkloadInfo{Source: "traces/azure-conv.csv", MeanPromptTokens: 1020, MeanOutputTokens: 211}
	if err := p.Validate(); err != nil {
		t.Errorf("Validate() = %v, want nil", err)
	}
}

func TestDurationDecodesGoDurationText(t *testing.T) {
	var d Duration
	if err := d.UnmarshalText([]byte("1.5s")); err != nil || d.D() != 1500*time.Millisecond {
		t.Errorf("UnmarshalText(1.5s) = %v, %v; want 1.5s", d.D(), err)
	}
	if err := d.UnmarshalText([]byte("fast")); err == nil {
		t.Error("UnmarshalText(fast) = nil error, want an error")
	}
	if b, _ := Duration(250 * time.Millisecond).MarshalText(); string(b) != "250ms" {
		t.Errorf("MarshalText(250ms) = %q", b)
	}
}

func TestParseNamesTheParentOfABadValueInAFlowMapping(t *testing.T) {
	data, err := os.ReadFile("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(data), "{p50: 0.013, p99: 0.024}", "{p50: fast, p99: 0.024}", 1)
	_, err = Parse([]byte(bad), "")
	want := "line 60: points[1].ttftSeconds: cannot unmarshal !!str `fast` into float64"
	if err == nil || err.Error() != want {
		t.Errorf("Parse error\n got: %v\nwant: %s", err, want)
	}
}
