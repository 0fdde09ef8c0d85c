//go:build kneewatch_cpuprofile

// This file is compiled only with -tags kneewatch_cpuprofile, for
// profiling kneewatch under cmd/kneewatch-scalebench: the product binary
// serves no profiling endpoint and links no profiler.

package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

// KNEEWATCH_CPUPROFILE names the file a CPU profile is written to,
// covering KNEEWATCH_CPUPROFILE_FOR (default 60s) from
// KNEEWATCH_CPUPROFILE_AFTER (default 60s, a warm-up) after start.
func init() {
	path := os.Getenv("KNEEWATCH_CPUPROFILE")
	if path == "" {
		return
	}
	after, err1 := durationEnv("KNEEWATCH_CPUPROFILE_AFTER", time.Minute)
	span, err2 := durationEnv("KNEEWATCH_CPUPROFILE_FOR", time.Minute)
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "kneewatch: cpu profile:", err1, err2)
		os.Exit(2)
	}
	go func() {
		time.Sleep(after)
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kneewatch: cpu profile:", err)
			return
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "kneewatch: cpu profile:", err)
			return
		}
		time.Sleep(span)
		pprof.StopCPUProfile()
	}()
}

func durationEnv(name string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}
