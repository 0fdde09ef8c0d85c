package config

import (
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/prometheus/common/promslog"
	"github.com/sethvargo/go-envconfig"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// Logging is how a kneewatch command logs, the same for every subcommand:
// --log.level and --log.format, else KNEEWATCH_LOG_LEVEL and
// KNEEWATCH_LOG_FORMAT (EnvName of the flags), else the command's default.
// serve reads them among its Settings; the other subcommands with
// RegisterLogFlags and LoadLogging.
type Logging struct {
	Level  string // debug, info, warn or error
	Format string // logfmt or json
}

// validate adds a problem for a bad level or format, under the names
// source gives the two flags ("--log.level", "KNEEWATCH_LOG_LEVEL", …).
func (l Logging) validate(p *strictyaml.List, source func(flagName string) string) {
	if err := promslog.NewLevel().Set(l.Level); err != nil {
		p.Add(source("log.level"), "unknown log level %q (want debug, info, warn or error)", l.Level)
	}
	if err := promslog.NewFormat().Set(l.Format); err != nil {
		p.Add(source("log.format"), "unknown log format %q (want logfmt or json)", l.Format)
	}
}

// Logger is promslog's logger, as Prometheus and its exporters log, writing
// to w. Every kneewatch logger is built here. Call it on a validated Logging
// (LoadLogging's, or Settings'): an unknown level or format falls back to
// info and logfmt.
func (l Logging) Logger(w io.Writer) *slog.Logger {
	level := promslog.NewLevel()
	_ = level.Set(l.Level)
	format := promslog.NewFormat()
	_ = format.Set(l.Format)
	return promslog.New(&promslog.Config{Level: level, Format: format, Writer: w})
}

// logSettings are the settings table's log flags, so their usage text and
// environment variables are serve's.
func logSettings() []setting {
	var out []setting
	for _, s := range settingsTable() {
		if s.flag == "log.level" || s.flag == "log.format" {
			out = append(out, s)
		}
	}
	return out
}

// RegisterLogFlags defines --log.level (default defaultLevel) and
// --log.format on fs, for a subcommand that logs but takes none of serve's
// other settings.
func RegisterLogFlags(fs *flag.FlagSet, defaultLevel string) {
	for _, s := range logSettings() {
		def := s.def
		if s.flag == "log.level" {
			def = defaultLevel
		}
		fs.String(s.flag, def, fmt.Sprintf("%s (env %s)", s.usage, s.envName()))
	}
}

// LoadLogging reads the flags RegisterLogFlags defined on the parsed fs: a
// flag the user set wins, then its environment variable (looked up in env),
// then the flag's default. Errors name where the bad value came from.
func LoadLogging(env envconfig.Lookuper, fs *flag.FlagSet) (Logging, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	values, origin := map[string]string{}, map[string]string{}
	for _, s := range logSettings() {
		f := fs.Lookup(s.flag)
		if f == nil {
			return Logging{}, fmt.Errorf("--%s is not defined: call RegisterLogFlags", s.flag)
		}
		values[s.flag], origin[s.flag] = f.Value.String(), "--"+s.flag+" / "+s.envName()
		if set[s.flag] {
			origin[s.flag] = "--" + s.flag
		} else if v, ok := env.Lookup(s.envName()); ok {
			values[s.flag], origin[s.flag] = v, s.envName()
		}
	}
	l := Logging{Level: values["log.level"], Format: values["log.format"]}
	var p strictyaml.List
	l.validate(&p, func(name string) string { return origin[name] })
	return l, p.Err()
}
