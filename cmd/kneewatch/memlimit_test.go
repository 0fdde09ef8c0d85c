package main

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

func TestTheGoMemoryLimitFollowsTheContainers(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	const gib = 1 << 30
	for _, tc := range []struct {
		name      string
		ratio     float64
		env       string
		provider  memlimit.Provider
		want      int64
		wantInLog string
	}{
		{"a 1 GiB container at the default ratio", 0.9, "", memlimit.Limit(gib), 966367641, "Go memory limit set from the container's"},
		{"a ratio the operator chose", 0.5, "", memlimit.Limit(gib), gib / 2, "limit_bytes=536870912"},
		{"GOMEMLIMIT set by the operator wins", 0.9, "300MiB", memlimit.Limit(gib), math.MaxInt64, "GOMEMLIMIT is set"},
		{"ratio 0 turns it off", 0, "", memlimit.Limit(gib), math.MaxInt64, "is off"},
		{"no cgroup (a laptop)", 0.9, "", func() (uint64, error) { return 0, errors.New("cgroups is not supported on this system") }, math.MaxInt64, "no container memory limit was found"},
		{"the library's own AUTOMEMLIMIT does not override the setting", 0.5, "", memlimit.Limit(gib), gib / 2, "ratio=0.5"},
		{"an unlimited cgroup", 0.9, "", func() (uint64, error) { return 0, memlimit.ErrNoLimit }, math.MaxInt64, "not limited"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			t.Setenv("GOMEMLIMIT", tc.env)
			t.Setenv("AUTOMEMLIMIT", "off") // kneewatch's settings alone decide
			var logs bytes.Buffer
			applyMemoryLimit(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), tc.ratio, tc.provider)
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("memory limit %d, want %d", got, tc.want)
			}
			if !strings.Contains(logs.String(), tc.wantInLog) {
				t.Errorf("logs %q do not say %q", logs.String(), tc.wantInLog)
			}
		})
	}
}
