package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/sethvargo/go-envconfig"

	"github.com/kneewatch/kneewatch/config"
)

// Every subcommand names its flags one way: --log.level and --log.format
// for logging (KNEEWATCH_LOG_LEVEL and KNEEWATCH_LOG_FORMAT under them, as
// serve reads them), --web.listen-address for the HTTP server a command
// runs, --<server>.listen-address for any other one (sim's
// --dcgm.listen-address), and the demo's simulator flags are sim's under
// sim. (--sim.web.listen-address). Names used before this convention stay
// as deprecated aliases (see aliasFlag).

// logFlags registers --log.level (default defaultLevel) and --log.format
// on fs; after fs.Parse, the returned function builds the subcommand's
// logger, writing to stderr, and logs a warning for each deprecated flag
// alias used.
func logFlags(fs *flag.FlagSet, defaultLevel string) func(stderr io.Writer) (*slog.Logger, error) {
	config.RegisterLogFlags(fs, defaultLevel)
	return func(stderr io.Writer) (*slog.Logger, error) {
		l, err := config.LoadLogging(envconfig.OsLookuper(), fs)
		if err != nil {
			return nil, err
		}
		logger := l.Logger(stderr)
		fs.Visit(func(f *flag.Flag) {
			if a, ok := f.Value.(aliasValue); ok {
				logger.Warn(fmt.Sprintf("--%s is deprecated: use --%s", f.Name, a.name))
			}
		})
		return logger, nil
	}
}

// aliasValue is a deprecated name of another flag: setting it sets that
// flag, as set on the command line (so it wins over the environment).
type aliasValue struct {
	fs   *flag.FlagSet
	name string // the flag it stands for
}

func (a aliasValue) Set(s string) error { return a.fs.Set(a.name, s) }

// String is empty, so the help shows no default beside the alias (the
// flag it stands for shows it).
func (aliasValue) String() string { return "" }

// aliasFlag registers old as a deprecated name of the flag current, which
// must be defined already, so scripts written before the names followed
// one convention keep working (with a warning, from logFlags' logger).
func aliasFlag(fs *flag.FlagSet, old, current string) {
	if fs.Lookup(current) == nil {
		panic("aliasFlag: no flag --" + current)
	}
	fs.Var(aliasValue{fs: fs, name: current}, old, "deprecated: use --"+current)
}
