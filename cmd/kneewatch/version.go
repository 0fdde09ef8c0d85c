package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/prometheus/common/version"
)

func init() {
	register("version", "print the version and build information", runVersion)
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	fmt.Fprintln(stdout, version.Print("kneewatch"))
	return nil
}
