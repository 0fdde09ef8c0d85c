package main

import (
	"context"
	"errors"
	"io"
)

// runSimServe is written by the simulator HTTP work.
func runSimServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("sim: not implemented yet")
}
