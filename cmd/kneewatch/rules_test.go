package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
			nil, `usage: --format: unknown format "json" (want rules or prometheusrule)`},
		{"a config file that does not exist is an error naming the flag", []string{"--config.file", "/nonexistent/kneewatch.yml"},
			nil, "--config.file: stat /nonexistent/kneewatch.yml: no such file or directory"},
		{"a stray argument is a usage error", []string{"extra"},
			nil, `usage: rules takes no arguments, got ["extra"]`},
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
