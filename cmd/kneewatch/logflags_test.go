package main

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"
)

func TestADeprecatedFlagNameActsAsTheFlagSetOnTheCommandLine(t *testing.T) {
	t.Setenv("KNEEWATCH_LOG_LEVEL", "debug")
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	newLogger := logFlags(fs, "info")
	aliasFlag(fs, "log-level", "log.level")
	if err := fs.Parse([]string{"--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	logger, err := newLogger(&stderr)
	if err != nil {
		t.Fatal(err)
	}
	logger.Warn("below error")
	logger.Error("shown")
	out := stderr.String()
	// The deprecation warning comes from the logger at level error, so it
	// is filtered like any warning; the level the alias set beat the
	// environment's debug.
	if strings.Contains(out, "below error") || !strings.Contains(out, `msg=shown`) {
		t.Errorf("--log-level error over KNEEWATCH_LOG_LEVEL=debug logged:\n%s", out)
	}
	if got := fs.Lookup("log.level").Value.String(); got != "error" {
		t.Errorf("--log.level is %q, want the alias's error", got)
	}
}
