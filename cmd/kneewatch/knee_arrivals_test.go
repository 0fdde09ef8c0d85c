package main

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneewatch/kneewatch/internal/testtools"
	"github.com/kneewatch/kneewatch/knee"
)

func TestServeWarnsOnlyAboutClosedLoopKnees(t *testing.T) {
	closed, err := knee.Load(filepath.Join(testtools.ModuleRoot(), "knee", "testdata", "valid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	poisson := *closed
	poisson.Knee.Arrivals, poisson.Knee.RequestsPerSecond, poisson.Knee.ClosedLoopConcurrency = knee.ArrivalsPoisson, 20, closed.Knee.Concurrency
	var logs testtools.SyncBuffer
	warnClosedLoopKnees(slog.New(slog.NewTextHandler(&logs, nil)), map[string]*knee.Profile{"swept-closed": closed, "swept-poisson": &poisson})
	out := logs.String()
	if !strings.Contains(out, "profile=swept-closed") || !strings.Contains(out, "--arrivals poisson") {
		t.Errorf("no warning naming the closed-loop profile and the fix:\n%s", out)
	}
	if strings.Contains(out, "swept-poisson") || strings.Count(out, "level=WARN") != 1 {
		t.Errorf("want exactly one warning, for the closed-loop profile:\n%s", out)
	}
}
