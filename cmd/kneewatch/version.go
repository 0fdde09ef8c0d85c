package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/prometheus/common/version"
)

func init() {
	register("version", "print the version and build information", runVersion)
	// Release builds set these with -ldflags -X to the VERSION file's
	// version (the Makefile, goreleaser); a plain `go build` or `go run`
	// says it is unstamped rather than repeat a version that goes stale.
	if version.Version == "" {
		version.Version = "dev"
	}
	if version.Revision == "" {
		version.Revision = vcsRevision()
	}
}

// vcsRevision is the commit the binary was built from, when the Go
// toolchain recorded it.
func vcsRevision() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
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
