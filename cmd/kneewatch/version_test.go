package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestVersionFlagPrintsTheVersion checks `kneewatch --version` prints what
// `kneewatch version` prints, not the usage text.
func TestVersionFlagPrintsTheVersion(t *testing.T) {
	var want bytes.Buffer
	if err := run(context.Background(), []string{"version"}, &want, &bytes.Buffer{}); err != nil {
		t.Fatalf("kneewatch version: %v", err)
	}
	if !strings.HasPrefix(want.String(), "kneewatch, version ") {
		t.Fatalf("kneewatch version printed %q", want.String())
	}
	for _, flag := range []string{"--version", "-version"} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{flag}, &stdout, &stderr); err != nil {
			t.Fatalf("kneewatch %s: %v (stderr %q)", flag, err, stderr.String())
		}
		if stdout.String() != want.String() || stderr.Len() != 0 {
			t.Errorf("kneewatch %s printed %q (stderr %q), want %q", flag, stdout.String(), stderr.String(), want.String())
		}
	}
}
