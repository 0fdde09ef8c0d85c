package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/model/rulefmt"
	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/rules"
)

func TestRulesCommand(t *testing.T) {
	var want bytes.Buffer
	if err := rules.Render(&want, rules.DefaultOptions(), rules.FormatRules); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		wantStdout func(string) bool
		wantErr    string
	}{
		{"with no flags it prints the default rule file", nil,
			func(s string) bool { return s == want.String() }, ""},
		{"--format prometheusrule prints the operator object", []string{"--format", "prometheusrule"},
			func(s string) bool { return strings.Contains(s, "kind: PrometheusRule\n") }, ""},
		{"an unknown format is a usage error naming the flag", []string{"--format", "json"},
			nil, `usage: --format: unknown format "json" (want rules, prometheusrule or helm)`},
		{"--format helm prints the chart's rule template", []string{"--format", "helm"},
			func(s string) bool {
				return strings.Contains(s, `{{- define "kneewatch.rules.spec" -}}`) &&
					strings.Contains(s, "expr: kneewatch_replica_headroom_ratio < {{ $p.headroom_low_below.num }}\n")
			}, ""},
		{"--format helm with a config file is a usage error: the chart's values set the alerts", []string{"--format", "helm", "--config.file", "x.yml"},
			nil, "usage: --format helm takes neither --config.file nor --evaluation.window: the chart's values set them"},
		{"a config file that does not exist is an error naming the flag", []string{"--config.file", "/nonexistent/kneewatch.yml"},
			nil, "--config.file: stat /nonexistent/kneewatch.yml: no such file or directory"},
		{"a stray argument is a usage error", []string{"extra"},
			nil, `usage: rules takes no arguments, got ["extra"]`},
		{"a zero evaluation window is a usage error naming the flag", []string{"--evaluation.window", "0s"},
			nil, "usage: --evaluation.window: must be above 0, got 0s"},
		{"--evaluation.window names the ruler group's records", []string{"--evaluation.window", "30s"},
			func(s string) bool {
				return strings.Contains(s, "record: kneewatch:replica_headroom_ratio:avg30s\n") &&
					strings.Contains(s, "avg_over_time(vllm:num_requests_running[30s])")
			}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"rules"}, tc.args...), &stdout, &stderr)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				if !errors.Is(err, errUsage) && strings.HasPrefix(tc.wantErr, "usage") {
					t.Errorf("error %v is not a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.wantStdout(stdout.String()) {
				t.Errorf("unexpected output:\n%.400s", stdout.String())
			}
		})
	}
}

// TestRulesCommandPrintsTheExampleConfigsGoldenRules runs `kneewatch rules
// --config.file` on config/example.yml, beside the example's profile files,
// and compares with the golden file the rules package checks FromConfig by.
func TestRulesCommandPrintsTheExampleConfigsGoldenRules(t *testing.T) {
	dir := t.TempDir()
	example, err := os.ReadFile(filepath.Join("..", "..", "config", "example.yml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kneewatch.yml")
	if err := os.WriteFile(path, example, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"profiles", "extra-profiles"} {
		abs, err := filepath.Abs(filepath.Join("..", "..", "config", "testdata", "example-root", sub))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"rules", "--config.file", path}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "rules", "testdata", "example-config.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), stdout.String()); diff != "" {
		t.Errorf("rules for config/example.yml differ from rules/testdata/example-config.golden.yaml (-golden +printed):\n%s", diff)
	}
}

// TestRulesCommandAppliesTheConfigsAlertSettings writes a config whose
// alert thresholds, for durations and objective are not the defaults, and
// finds each in the printed rules.
func TestRulesCommandAppliesTheConfigsAlertSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kneewatch.yml")
	cfg := `targets:
  - replica: vllm-0
    metrics_url: http://127.0.0.1:8000/metrics
alerts:
  headroom_low: {below: 0.25, for: 2m}
  headroom_exhausted: {below: 0.02, for: 15s, hold: 1m, sustain_requests: 0, predict_window: 3m, predict_confirm: 2m, predict_guard: 0.12}
  past_knee: {below: -0.1, for: 30s}
  slo_objective: 0.999
  fleet_capacity: {for: 90s}
  labels: {team: search}
`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"rules", "--config.file", path, "--evaluation.window", "20s"}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var file rulefmt.RuleGroups
	if err := yaml.Unmarshal(stdout.Bytes(), &file); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				got[r.Alert] = r.Expr + " for " + r.For.String() + " team=" + r.Labels["team"]
			}
		}
	}
	for alert, want := range map[string]string{
		"KneewatchHeadroomLow": "kneewatch_replica_headroom_ratio < 0.25 for 2m team=search",
		"KneewatchHeadroomExhausted": "(\n    (max_over_time(kneewatch_replica_headroom_ratio[1m]) < 0.02)\n  or\n    (\n        (kneewatch_replica_headroom_ratio < 0.12)\n      and\n" +
			"        (\n            (predict_linear(kneewatch_replica_headroom_ratio[5m], 180) <= 0)\n          and\n" +
			"            (predict_linear(kneewatch_replica_headroom_ratio[2m], 180) <= 0)\n        )\n    )\n)\n" +
			"and on (replica, model, profile, namespace, pod, cluster)\nmax by (replica, model, profile, namespace, pod, cluster) (\n  kneewatch_replica_requests_total offset 2m\n) for 15s team=search",
	} {
		if diff := cmp.Diff(want, got[alert]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", alert, diff)
		}
	}
	if got := got["KneewatchPastKnee"]; !strings.HasPrefix(got, "(kneewatch_replica_headroom_ratio < -0.1)") || !strings.HasSuffix(got, " for 30s team=search") {
		t.Errorf("KneewatchPastKnee does not take past_knee's below and for: %s", got)
	}
	for _, want := range []string{"(14.4 * 0.001)", "record: kneewatch:replica_headroom_ratio:avg20s", "for: 1m30s"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the printed rules lack %q", want)
		}
	}
}

func TestRulesCommandRejectsAnInvalidConfigNamingTheField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kneewatch.yml")
	cfg := "targets:\n  - replica: vllm-0\n    metrics_url: http://127.0.0.1:8000/metrics\nalerts:\n  labels: {job: x}\n"
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"rules", "--config.file", path}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), path+`: line 5: alerts.labels: "job" is set by the generated rules or by Prometheus`) {
		t.Errorf("error = %v, want one naming the file and alerts.labels", err)
	}
	if stdout.Len() != 0 {
		t.Errorf("printed %d bytes of rules for an invalid config", stdout.Len())
	}
}

func TestRulesCommandWritesOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kneewatch.rules.yml")
	if err := os.WriteFile(path, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"rules", "--out", path}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := rules.Render(&want, rules.DefaultOptions(), rules.FormatRules); err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() || stdout.Len() != 0 {
		t.Errorf("--out wrote %d bytes (want %d) and printed %d bytes to stdout", len(got), want.Len(), stdout.Len())
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("--out left %d files behind, want only the rule file", len(entries))
	}
}
