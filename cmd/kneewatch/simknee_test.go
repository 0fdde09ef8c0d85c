package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/knee"
)

func TestSimKneePrintsTheTrueKneeAsYAML(t *testing.T) {
	if testing.Short() {
		t.Skip("a full knee search (about a second)")
	}
	var out, errb bytes.Buffer
	args := []string{"sim", "knee", "--preset", "llama-3.1-8b-h100", "--workload", "chat",
		"--slo-ttft", "500ms", "--slo-tpot", "20ms", "--seed", "1", "--arrivals", "closed-loop"}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errb.String())
	}
	var prof knee.Profile
	dec := yaml.NewDecoder(&out)
	dec.KnownFields(true)
	if err := dec.Decode(&prof); err != nil {
		t.Fatalf("output is not a knee profile: %v", err)
	}
	if prof.Kind != knee.Kind || prof.Match.Model != "meta-llama/Llama-3.1-8B-Instruct" || prof.SLO.TPOT.Seconds() != 0.020 {
		t.Errorf("profile header: kind %q model %q SLO %+v", prof.Kind, prof.Match.Model, prof.SLO)
	}
	// The knee meets the SLO and the next concurrency does not.
	byC := map[float64]knee.Point{}
	for _, pt := range prof.Points {
		byC[pt.Concurrency] = pt
	}
	k := prof.Knee.Concurrency
	if at, next := byC[k], byC[k+1]; k < 2 || !at.MeetsSLO || next.MeetsSLO || next.Concurrency != k+1 {
		t.Errorf("knee %g: meets %v, knee+1 meets %v (present %v)", k, at.MeetsSLO, next.MeetsSLO, next.Concurrency == k+1)
	}
	if errb.Len() != 0 {
		t.Errorf("unexpected stderr: %s", errb.String())
	}
}

func TestSimKneeWithMixScalesAddsAMixModel(t *testing.T) {
	if testing.Short() {
		t.Skip("five knee searches")
	}
	var out, errb bytes.Buffer
	args := []string{"sim", "knee", "--preset", "llama-3.1-8b-l4", "--workload", "chat",
		"--slo-ttft", "2s", "--slo-tpot", "150ms", "--mix-scales", "2:1,1:2,2:2,4:1", "--arrivals", "closed-loop"}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errb.String())
	}
	prof, err := knee.Parse(out.Bytes(), "stdout")
	if err != nil {
		t.Fatalf("output is not a valid knee profile: %v", err)
	}
	m := prof.MixModel
	// The L4's small KV cache keeps every knee below --max-concurrency, so
	// none is left out as a lower bound.
	if m == nil || len(m.Points) != 5 {
		t.Fatalf("mix model = %+v, want one with the profile's mix and 4 scaled ones\nstderr: %s", m, errb.String())
	}
	if own := m.Points[0]; own.Concurrency != prof.Knee.Concurrency || own.MeanPromptTokens != prof.Workload.MeanPromptTokens {
		t.Errorf("first mix point %+v is not the profile's own knee %g at %g prompt tokens", own, prof.Knee.Concurrency, prof.Workload.MeanPromptTokens)
	}
	for _, pt := range m.Points[1:] {
		if want := prof.Workload.MeanPromptTokens * pt.PromptScale; pt.MeanPromptTokens < 0.9*want || pt.MeanPromptTokens > 1.1*want {
			t.Errorf("point at prompt ×%g has mean prompt %g, want about %g", pt.PromptScale, pt.MeanPromptTokens, want)
		}
	}
}

func TestSimKneeWithASpeedModelAddsOne(t *testing.T) {
	if testing.Short() {
		t.Skip("three knee searches")
	}
	var out, errb bytes.Buffer
	args := []string{"sim", "knee", "--preset", "llama-3.1-8b-l4", "--workload", "chat",
		"--slo-ttft", "2s", "--slo-tpot", "150ms", "--speed-model", "0.8,0.5", "--arrivals", "closed-loop"}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errb.String())
	}
	prof, err := knee.Parse(out.Bytes(), "stdout")
	if err != nil {
		t.Fatalf("output is not a valid knee profile: %v", err)
	}
	m := prof.SpeedModel
	if m == nil || len(m.Points) != 2 || m.Points[0].Speed != 0.8 || m.Points[1].Speed != 0.5 {
		t.Fatalf("speed model = %+v, want knees at speeds 0.8 and 0.5\nstderr: %s", m, errb.String())
	}
	if slow, fast := m.Points[1], m.Points[0]; !(slow.Concurrency <= fast.Concurrency && fast.Concurrency <= prof.Knee.Concurrency) {
		t.Errorf("knees %g (0.5), %g (0.8) and %g (full speed): a slower GPU's knee should be no higher", slow.Concurrency, fast.Concurrency, prof.Knee.Concurrency)
	}
}

func TestSimKneeWarnsWhenTheSLOHoldsAtEveryLevel(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"sim", "knee", "--slo-ttft", "10s", "--slo-tpot", "1s", "--max-concurrency", "4", "--arrivals", "closed-loop"}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if want := "every level up to --max-concurrency 4 met the SLO; the knee is at least 4 (profile marked partial)"; !strings.Contains(errb.String(), want) {
		t.Errorf("stderr %q lacks %q", errb.String(), want)
	}
	if !strings.Contains(out.String(), "partial: true") {
		t.Error("profile not marked partial")
	}
}

func TestSimKneeWithPoissonArrivalsPrintsAPoissonKnee(t *testing.T) {
	// A loose SLO and a low ceiling keep it cheap: the closed-loop sweep
	// stops at 16, and both poisson trials (0.2× and 1× its rate, a minute
	// each after a minute's warmup) keep the SLO.
	var out, errb bytes.Buffer
	args := []string{"sim", "knee", "--slo-ttft", "10s", "--slo-tpot", "1s", "--max-concurrency", "16",
		"--arrivals", "poisson", "--open-loop-warmup", "1m", "--open-loop-steady", "1m"}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errb.String())
	}
	if !strings.Contains(out.String(), "arrivals: poisson") {
		t.Errorf("the profile does not say arrivals: poisson:\n%s", out.String())
	}
	var prof knee.Profile
	dec := yaml.NewDecoder(&out)
	dec.KnownFields(true)
	if err := dec.Decode(&prof); err != nil {
		t.Fatalf("output is not a knee profile: %v", err)
	}
	if err := prof.Validate(); err != nil {
		t.Fatalf("the profile does not validate: %v", err)
	}
	k := prof.Knee
	// The 1× rate is tried first, and keeps: one trial.
	if k.ClosedLoopConcurrency != 16 || len(prof.Sweep.RateLevels) != 1 || k.RequestsPerSecond != prof.Sweep.RateLevels[0] || !(k.Concurrency > 0 && k.Concurrency <= 16) {
		// In flight at the 1× rate can exceed the curve's last point; the
		// knee is then put at that end (16).
		t.Errorf("knee %+v, rate levels %v: want the 1× rate kept at most 16 in flight, closed-loop knee 16", k, prof.Sweep.RateLevels)
	}
	if want := "the closed-loop knee is at least 16, and the poisson search went no higher than its rate (profile marked partial)"; !strings.Contains(errb.String(), want) {
		t.Errorf("stderr %q lacks %q", errb.String(), want)
	}
}

func TestSimKneeRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"TTFT SLO missing", []string{"--slo-tpot", "30ms"}, "sim knee: --slo-ttft is required and must be > 0 (e.g. 500ms)"},
		{"TPOT SLO missing", []string{"--slo-ttft", "1s"}, "sim knee: --slo-tpot is required and must be > 0 (e.g. 30ms)"},
		{"quantile out of range", []string{"--slo-ttft", "1s", "--slo-tpot", "30ms", "--slo-quantile", "99"}, "sim knee: --slo-quantile must be in (0,1), got 99"},
		{"speed not positive", []string{"--slo-ttft", "1s", "--slo-tpot", "30ms", "--speed", "0"}, "sim knee: --speed must be > 0, got 0"},
		{"unknown preset", []string{"--slo-ttft", "1s", "--slo-tpot", "30ms", "--preset", "h100"},
			`sim knee: --preset: unknown simulator preset "h100" (known: [llama-3.1-8b-h100 llama-3.1-8b-l4 llama-3.3-70b-fp8-h200])`},
		{"unknown workload", []string{"--slo-ttft", "1s", "--slo-tpot", "30ms", "--workload", "chit-chat"},
			`sim knee: --workload: workload "chit-chat": not a preset (chat, code, long-context, rag, summarize) nor a .yaml/.yml mix file or .jsonl/.csv trace`},
		{"missing preset file", []string{"--slo-ttft", "1s", "--slo-tpot", "30ms", "--preset-file", "testdata/none.yaml"},
			"sim knee: --preset-file: reading preset override: open testdata/none.yaml: no such file or directory"},
		{"unknown arrivals", []string{"--slo-ttft", "1s", "--slo-tpot", "30ms", "--arrivals", "open-loop"},
			`sim knee: --arrivals must be closed-loop or poisson, got "open-loop"`},
		{"no steady part", []string{"--slo-ttft", "1s", "--slo-tpot", "30ms", "--arrivals", "poisson", "--open-loop-steady", "0s"},
			"sim knee: --open-loop-steady must be > 0, got 0s"},
		{"no warmup", []string{"--slo-ttft", "1s", "--slo-tpot", "30ms", "--arrivals", "poisson", "--open-loop-warmup", "0s"},
			"sim knee: --open-loop-warmup must be > 0 (a trial starts with an empty replica), got 0s"},
		{"steady part shorter than a tick", []string{"--slo-ttft", "1s", "--slo-tpot", "30ms", "--arrivals", "poisson", "--open-loop-steady", "1s"},
			"sim knee: open loop: tick 5s is longer than the steady part 1s, so the SLO would never be judged"},
		{"stray argument", []string{"--slo-ttft", "1s", "--slo-tpot", "30ms", "extra"}, `sim knee: unexpected arguments ["extra"]`},
		{"bad mix scale", []string{"--slo-ttft", "1s", "--slo-tpot", "30ms", "--mix-scales", "2:1,2"},
			`sim knee: --mix-scales: mix scale "2": want PROMPT:OUTPUT factors, e.g. 2:1`},
		{"bad speed", []string{"--slo-ttft", "1s", "--slo-tpot", "30ms", "--speed-model", "0.5,half"},
			`sim knee: --speed-model: speed "half": want a share of the swept GPU's speed, e.g. 0.6`},
		{"SLO unreachable", []string{"--preset", "llama-3.1-8b-l4", "--slo-ttft", "1s", "--slo-tpot", "10ms", "--max-concurrency", "2"},
			"sim knee: the SLO is not met even at concurrency 1: p99 TTFT 0.422s (SLO 1s), p99 TPOT 0.0592s (SLO 10ms)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(context.Background(), append([]string{"sim", "knee"}, tt.args...), &out, &errb)
			if err == nil || err.Error() != tt.want {
				t.Errorf("got %v\nwant %s", err, tt.want)
			}
			if out.Len() != 0 {
				t.Errorf("printed a profile despite the error:\n%s", out.String())
			}
		})
	}
}
