package main

import (
	"context"
	"io"
)

func init() {
	register("sim", "run simulated vLLM-compatible replicas ('sim knee' prints a preset's true knee)", runSim)
}

// runSim dispatches `kneewatch sim knee …` (ground truth in virtual time) and
// `kneewatch sim …` (the HTTP fleet).
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "knee" {
		return runSimKnee(ctx, args[1:], stdout, stderr)
	}
	return runSimServe(ctx, args, stdout, stderr)
}
