package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRunRejectsBadFlagsBeforeSimulatingAnything(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a scenario number out of range", []string{"--scenarios", "1,9"}, `--scenarios: "9" is not a scenario number (1–7)`},
		{"a scenario that is not a number", []string{"--scenarios", "ramp"}, `--scenarios: "ramp" is not a scenario number`},
		{"a stray argument", []string{"extra"}, `unexpected arguments ["extra"]`},
		{"an unknown flag", []string{"--speed", "2"}, "flag provided but not defined: -speed"},
		{"a seed that is not a number", []string{"--other-seeds", "2,x"}, `--other-seeds: "x" is not a seed`},
		{"a zero seed", []string{"--other-seeds", "0"}, `--other-seeds: "0" is not a seed`},
		{"no truth grid search", []string{"--truth-grid-seeds", "0"}, "--truth-grid-seeds must be at least 1, got 0"},
		{"an unknown way to run the resweep's trials", []string{"--resweep-trials", "long"}, `--resweep-trials must be sweep or truth, got "long"`},
		{"no resweep searches", []string{"--resweep-searches", "0"}, `--resweep-searches must be 1 to 9, got 0`},
		{"draws of the regressions", []string{"--suite-seeds", "2,3"}, "--suite-seeds draws a half of the generated suite: give --suite test or tune"},
		{"a draw given twice", []string{"--suite", "test", "--suite-seeds", "2,3,2"}, "--suite-seeds: seed 2 is given twice"},
		{"a zero suite seed", []string{"--suite", "test", "--suite-seeds", "2,0"}, `--suite-seeds: "0" is not a seed`},
		{"draws with a suite seed besides", []string{"--suite", "test", "--suite-seed", "2", "--suite-seeds", "1,2"},
			"--suite-seeds runs neither the regressions nor the what-ifs, and draws the suite with its own seeds: --suite-seed would be ignored"},
		{"draws with what-ifs", []string{"--suite", "test", "--suite-seeds", "2", "--resweep-seed", "3", "--other-seeds", "2"}, "--other-seeds, --resweep-seed would be ignored"},
		{"a checked seed that is not a number", []string{"--suite", "test", "--suite-seeds", "2", "--checked-seeds", "one"}, `--checked-seeds: "one" is not a seed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run(%q) = %v, want an error containing %q", tt.args, err, tt.want)
			}
			if stdout.Len() > 0 {
				t.Errorf("wrote a report for bad flags:\n%s", stdout.String())
			}
		})
	}
}

func TestRunWritesTheReportOfTheChosenScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates an hour of traffic")
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"--scenarios", "6", "--what-if=false", "--other-seeds", "2"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	md := stdout.String()
	for _, want := range []string{"go run ./cmd/kneewatch-bench --scenarios 6 --what-if=false --other-seeds 2", "| 6 diurnal |", "## Goals",
		"## Other seeds", "\n| 1 | ", "\n| 2 | "} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(md, "| 1 steady-ramp |") {
		t.Error("the report has a scenario that was not chosen")
	}
}
