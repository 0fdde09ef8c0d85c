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
	// Release builds set these with -ldflags -X (see the Makefile's build
	// target); a plain `go build` or `go run` still names itself.
	if version.Version == "" {
		version.Version = "0.1.0-dev"
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
