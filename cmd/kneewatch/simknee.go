package main

import (
	"context"
	"errors"
	"io"
)

// runSimKnee is written by the simulator core work (ground truth).
func runSimKnee(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("sim knee: not implemented yet")
}
