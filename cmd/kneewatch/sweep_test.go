package main

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/sweep"
)

// startSweepSim starts one simulated replica with its DCGM endpoint on
// loopback, as `kneewatch sim` would; the test stops it.
func startSweepSim(t *testing.T) *sim.Fleet {
	t.Helper()
	p, err := sim.LoadPreset("llama-3.1-8b-h100")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f, err := sim.StartFleet(ctx, sim.FleetConfig{Listen: "127.0.0.1:0", DCGMListen: "127.0.0.1:0", Preset: p, Speed: 200, ShutdownGrace: time.Second})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		f.Close()
	})
	return f
}

func TestSweepWritesTheProfilePlotAndReport(t *testing.T) {
	if testing.Short() {
		t.Skip("sweeps the simulator for a few seconds")
	}
	f := startSweepSim(t)
	dir := t.TempDir()
	profile, plot, report := filepath.Join(dir, "profile.yaml"), filepath.Join(dir, "knee.png"), filepath.Join(dir, "report.md")
	var out, errb bytes.Buffer
	args := []string{"sweep", "--target", f.Replicas()[0].URL, "--model", "meta-llama/Llama-3.1-8B-Instruct",
		"--dcgm-url", f.DCGMURL(), "--slo-ttft", "50ms", "--slo-tpot", "5ms", "--workload", "chat",
		"--max-concurrency", "4", "--min-requests", "40", "--scrape-interval", "50ms",
		// The closed-loop search alone: this is about the files written
		// (the poisson default's trials are tested in package sweep).
		"--arrivals", "closed-loop",
		"--out", profile, "--plot", plot, "--report", report}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errb.String())
	}
	prof, err := knee.Load(profile)
	if err != nil {
		t.Fatalf("the profile does not load: %v", err)
	}
	// Every level meets so loose an SLO: the knee is the highest level,
	// --max-concurrency (or earlier, should throughput stop growing on a
	// busy machine).
	if prof.Knee.Concurrency != prof.Points[len(prof.Points)-1].Concurrency || prof.Match.Engine != "vllm" || prof.Match.GPU != "NVIDIA H100 80GB HBM3" {
		t.Errorf("knee %g (levels %v) engine %q GPU %q", prof.Knee.Concurrency, prof.Sweep.Levels, prof.Match.Engine, prof.Match.GPU)
	}
	if prof.Knee.Concurrency == 4 && !prof.Metadata.Partial {
		t.Error("a knee at --max-concurrency with the SLO met is not marked partial")
	}
	last := prof.Points[len(prof.Points)-1]
	if prof.Points[0].GPUUtilization == nil || last.Running <= 0 {
		t.Errorf("the engine and DCGM metrics were not recorded: %+v", last)
	}
	pf, err := os.Open(plot)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if _, err := png.Decode(pf); err != nil {
		t.Errorf("the plot is not a PNG: %v", err)
	}
	md, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| concurrency | requests |", "[profile.yaml](profile.yaml)", "![latency and throughput against concurrency](knee.png)", "| stopped |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if !strings.Contains(out.String(), fmt.Sprintf("knee: concurrency %g", prof.Knee.Concurrency)) {
		t.Errorf("stdout %q", out.String())
	}
	if !strings.Contains(out.String(), "mix model: none") {
		t.Errorf("stdout does not say the profile has no mix model: %q", out.String())
	}
	if !strings.Contains(errb.String(), `msg="level measured" concurrency=1`) {
		t.Errorf("no plain log line per level on a non-terminal stderr:\n%s", errb.String())
	}

	// The profile the sweep wrote drives the watcher's inference: serve
	// watches the same replica against it and exports its headroom.
	cfg := filepath.Join(dir, "kneewatch.yml")
	if err := os.WriteFile(cfg, []byte(`global: {scrape_timeout: 150ms}
profiles: [{name: swept, file: profile.yaml}]
targets:
  - replica: swept-0
    metrics_url: `+f.Replicas()[0].MetricsURL+`
    profile: swept
`), 0o644); err != nil {
		t.Fatal(err)
	}
	body := serveUntil(t, cfg, `kneewatch_replica_headroom_ratio{`)
	if !strings.Contains(body, fmt.Sprintf(`kneewatch_knee_concurrency{model="meta-llama/Llama-3.1-8B-Instruct",namespace="",pod="",profile="swept",replica="swept-0"} %g`, prof.Knee.Concurrency)) {
		t.Errorf("serve did not export the swept knee (%g) for the replica:\n%s", prof.Knee.Concurrency, body)
	}

	// And it drives the demo: a fleet held at shares of the swept knee,
	// each replica evaluated against it (watched at once, without waiting
	// for a steady load: only the profile is checked here).
	var demoOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
	defer cancel()
	if err := run(ctx, []string{"demo", "--profile", profile, "--web.listen-address", "127.0.0.1:0",
		"--sim.web.listen-address", "127.0.0.1:0", "--sim.dcgm.listen-address", "127.0.0.1:0", "--evaluation.interval", "500ms",
		"--evaluation.window", "4s", "--table.interval", "3s", "--load.settle", "0s"}, &demoOut, io.Discard); err != nil {
		t.Fatalf("demo --profile: %v", err)
	}
	if !strings.Contains(demoOut.String(), "judging llama-3.1-8b-h100 replicas against the profile") ||
		!regexp.MustCompile(`demo-3\s+past\s+[0-9.]+\s+\d+\s+[-+][0-9.]+`).MatchString(demoOut.String()) {
		t.Errorf("the demo did not evaluate its replicas against the swept profile:\n%s", demoOut.String())
	}
}

func TestSweepRejectsBadFlagsBeforeAnyLoad(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(keyFile, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"sweep", "--target", "http://127.0.0.1:1", "--model", "m", "--slo-ttft", "1s", "--slo-tpot", "50ms", "--out", "p.yaml"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no target", []string{"sweep", "--model", "m", "--slo-ttft", "1s", "--slo-tpot", "50ms", "--out", "p.yaml"}, "--target is required"},
		{"no SLO", []string{"sweep", "--target", "http://h", "--model", "m", "--out", "p.yaml"}, "--slo-ttft is required"},
		{"no output", []string{"sweep", "--target", "http://h", "--model", "m", "--slo-ttft", "1s", "--slo-tpot", "50ms"}, "--out is required"},
		{"a plot of an unknown format", append(base, "--plot", "knee.gif"), "the file name must end in .png or .svg"},
		{"a target without a scheme", append(base[:1:1], "--target", "127.0.0.1:8000", "--model", "m", "--slo-ttft", "1s", "--slo-tpot", "50ms", "--out", "p.yaml"), "want an http:// or https:// URL"},
		{"an unknown workload", append(base, "--workload", "nope"), `workload "nope": not a preset`},
		{"an empty API key file", append(base, "--api-key-file", keyFile), "is empty"},
		{"a quantile out of range", append(base, "--slo-quantile", "1"), "--slo-quantile must be in (0,1)"},
		{"an unknown arrivals kind", append(base, "--arrivals", "uniform"), `--arrivals must be closed-loop or poisson, got "uniform"`},
		{"open-loop flags without poisson", append(base, "--arrivals", "closed-loop", "--open-loop-steady", "1m"), "--open-loop-steady only apply with --arrivals poisson"},
		{"a zero open-loop steady part", append(base, "--arrivals", "poisson", "--open-loop-steady", "0s"), "--open-loop-steady must be > 0, got 0s"},
		{"a negative open-loop warm-up", append(base, "--arrivals", "poisson", "--open-loop-warmup", "-1s"), "--open-loop-warmup must be > 0, got -1s"},
		{"a threshold share over 1", append(base, "--arrivals", "poisson", "--open-loop-threshold-share", "1.1"), "--open-loop-threshold-share must be in (0, 1], got 1.1"},
		{"a zero threshold share", append(base, "--arrivals", "poisson", "--open-loop-threshold-share", "0"), "--open-loop-threshold-share must be in (0, 1], got 0"},
		{"no searches", append(base, "--open-loop-searches", "0"), "--open-loop-searches must be 1 to 9, got 0"},
		{"too many searches", append(base, "--open-loop-searches", "10"), "--open-loop-searches must be 1 to 9, got 10"},
		{"searches with a closed loop", append(base, "--arrivals", "closed-loop", "--open-loop-searches", "3"), "--open-loop-searches only apply with --arrivals poisson"},
		{"a malformed open-loop duration", append(base, "--arrivals", "poisson", "--open-loop-steady", "ten"), `invalid value "ten" for flag -open-loop-steady`},
		{"a bad mix scale", append(base, "--mix-scales", "2:0"), `--mix-scales: mix scale "2:0": output factor: want a finite number > 0`},
		{"a speed of the whole GPU", append(base, "--speed-model", "0.8,1"), `sweep: --speed-model: speed "1": must be in (0,1)`},
		{"a negative max model length", append(base, "--max-model-len", "-1"), "--max-model-len must be ≥ 0, got -1"},
		{"an unreachable target", base, "is unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(context.Background(), tc.args, &out, &errb)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestSweepNeverLogsTheAPIKey(t *testing.T) {
	t.Setenv("KNEEWATCH_API_KEY", "sk-secret-value")
	var out, errb bytes.Buffer
	args := []string{"sweep", "--target", "http://127.0.0.1:1", "--model", "m", "--slo-ttft", "1s", "--slo-tpot", "50ms", "--out", "p.yaml"}
	err := run(context.Background(), args, &out, &errb)
	if err == nil {
		t.Fatal("an unreachable target was accepted")
	}
	if strings.Contains(err.Error()+out.String()+errb.String(), "sk-secret-value") {
		t.Error("the API key appears in the output")
	}
}

// A profile with a mix model is written without the hint to measure one.
func TestSweepOutputsSayWhenTheProfileHasNoMixModel(t *testing.T) {
	for _, tc := range []struct {
		file string
		hint bool
	}{{"../../knee/testdata/valid-mix.yaml", false}, {"../../knee/testdata/valid.yaml", true}} {
		prof, err := knee.Load(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := writeSweepOutputs(&sweep.Outcome{Profile: prof}, filepath.Join(t.TempDir(), "p.yaml"), "", "", sweep.ReportInfo{}, &out); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), "mix model: none"); got != tc.hint {
			t.Errorf("%s (mix model %v): hint printed %v, want %v:\n%s", tc.file, prof.MixModel != nil, got, tc.hint, out.String())
		}
	}
}
