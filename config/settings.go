package config

import (
	"context"
	"encoding"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/exporter-toolkit/web"
	"github.com/sethvargo/go-envconfig"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// EnvPrefix starts every environment variable kneewatch reads.
const EnvPrefix = "KNEEWATCH_"

// DefaultListenAddress is kneewatch's port, :9847, in the exporter range
// 9100–9999 (a number of our choosing, not an allocation).
const DefaultListenAddress = ":9847"

// Settings are the process settings. Each comes, strongest first, from a
// command-line flag the user set, a KNEEWATCH_* environment variable named
// after the flag (see EnvName), or its default (settingsTable).
type Settings struct {
	// ListenAddress is where /metrics is served. --web.listen-address,
	// KNEEWATCH_WEB_LISTEN_ADDRESS. Default :9847.
	ListenAddress string
	// LogLevel is debug, info, warn or error. --log.level,
	// KNEEWATCH_LOG_LEVEL. Default info.
	LogLevel string
	// LogFormat is logfmt or json. --log.format, KNEEWATCH_LOG_FORMAT.
	// Default logfmt.
	LogFormat string
	// EvaluationInterval is how often every target is scraped and
	// evaluated. --evaluation.interval, KNEEWATCH_EVALUATION_INTERVAL.
	// Default 5s.
	EvaluationInterval Duration
	// Window is the span rates and quantiles are computed over; at least two
	// evaluation intervals. --evaluation.window, KNEEWATCH_EVALUATION_WINDOW.
	// Default 1m.
	Window Duration
	// ConfigFile is the config file. --config.file, KNEEWATCH_CONFIG_FILE.
	// Default kneewatch.yml.
	ConfigFile string
	// WebConfigFile is an exporter-toolkit web config (TLS, basic auth) for
	// the listener; empty serves plain HTTP. --web.config.file,
	// KNEEWATCH_WEB_CONFIG_FILE.
	WebConfigFile string
	// Shard is this instance's shard, 0 to TotalShards-1: it watches only
	// the replicas whose identity hashes to it, as kube-state-metrics
	// shards objects. --shard, KNEEWATCH_SHARD. Default 0.
	Shard Count
	// TotalShards is how many instances split the replicas between them;
	// every instance must be given the same number. --total-shards,
	// KNEEWATCH_TOTAL_SHARDS. Default 1 (no sharding).
	TotalShards Count
	// AutoGoMemLimitRatio is the share of the container's memory limit
	// (its cgroup's) set as the Go runtime's soft memory limit, unless
	// GOMEMLIMIT is set; 0 turns it off. --auto-gomemlimit.ratio,
	// KNEEWATCH_AUTO_GOMEMLIMIT_RATIO. Default 0.9, as Prometheus's.
	AutoGoMemLimitRatio Ratio

	// origin says where each setting came from, by flag name, for errors.
	origin map[string]string
	// deprecations are warnings about deprecated environment variables used.
	deprecations []string
}

// setting ties a Settings field to its flag; the environment variable is
// derived from the flag name, so this one list drives both.
type setting struct {
	flag  string // flag name without dashes
	field string // Settings field name
	def   string // default, as a flag would be given it
	usage string
	// deprecatedEnv is the variable's name before env names followed the
	// flags (kneewatch ≤ 0.1); still read, with a warning, when the
	// flag-named one is unset.
	deprecatedEnv string
}

// settingsTable lists every setting, in the order flags are registered.
func settingsTable() []setting {
	return []setting{
		{"web.listen-address", "ListenAddress", DefaultListenAddress, "address to serve /metrics on", "KNEEWATCH_LISTEN_ADDRESS"},
		{"web.config.file", "WebConfigFile", "", "exporter-toolkit web config file enabling TLS or basic auth", ""},
		{"config.file", "ConfigFile", "kneewatch.yml", "kneewatch config file", "KNEEWATCH_CONFIG"},
		{"log.level", "LogLevel", "info", "log level: debug, info, warn or error", ""},
		{"log.format", "LogFormat", "logfmt", "log format: logfmt or json", ""},
		{"evaluation.interval", "EvaluationInterval", "5s", "how often targets are scraped and evaluated", ""},
		{"evaluation.window", "Window", "1m", "span of rates and quantiles (at least two evaluation intervals)", "KNEEWATCH_WINDOW"},
		{"shard", "Shard", "0", "this instance's shard, 0 to total-shards minus 1: it watches only the replicas hashed to it", ""},
		{"total-shards", "TotalShards", "1", "how many kneewatch instances split the replicas (the same on every instance)", ""},
		{"auto-gomemlimit.ratio", "AutoGoMemLimitRatio", "0.9", "share of the container's memory limit set as the Go runtime's memory limit unless GOMEMLIMIT is set; 0: off", ""},
	}
}

// EnvName is the environment variable of a flag: KNEEWATCH_ and the flag
// name upper-cased with dots and dashes as underscores, as Prometheus-style
// exporters name theirs (--evaluation.window → KNEEWATCH_EVALUATION_WINDOW).
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(flagName))
}

// envName returns the environment variable of a setting.
func (s setting) envName() string { return EnvName(s.flag) }

// DefaultSettings returns the settings with no flag and no environment.
func DefaultSettings() Settings {
	s, err := loadSettings(context.Background(), envconfig.MapLookuper(nil), nil)
	if err != nil {
		// The defaults are constants checked by tests; this cannot happen.
		panic(err)
	}
	return s
}

// RegisterFlags defines one string flag per setting on fs, showing the
// default and the environment variable in the help. Values are applied by
// LoadSettings only when the user set them (see SetFlags), so environment
// variables keep working under flag defaults.
func RegisterFlags(fs *flag.FlagSet) {
	for _, s := range settingsTable() {
		fs.String(s.flag, s.def, fmt.Sprintf("%s (env %s)", s.usage, s.envName()))
	}
}

// SetFlags returns the settings flags the user set on the command line, by
// name, with their values: what LoadSettings takes.
func SetFlags(fs *flag.FlagSet) map[string]string {
	known := map[string]bool{}
	for _, s := range settingsTable() {
		known[s.flag] = true
	}
	set := map[string]string{}
	fs.Visit(func(f *flag.Flag) {
		if known[f.Name] {
			set[f.Name] = f.Value.String()
		}
	})
	return set
}

// LoadSettings builds the settings from defaults, then KNEEWATCH_*
// environment variables, then flags (flag name → value, only those the user
// set; SetFlags gives exactly that), and validates them. Typical use:
//
//	config.RegisterFlags(fs)
//	if err := fs.Parse(args); err != nil { … }
//	settings, err := config.LoadSettings(ctx, config.SetFlags(fs))
func LoadSettings(ctx context.Context, flags map[string]string) (Settings, error) {
	return LoadSettingsFrom(ctx, envconfig.OsLookuper(), flags)
}

// LoadSettingsFrom is LoadSettings with the environment read through env,
// which is asked for full names such as KNEEWATCH_EVALUATION_WINDOW; tests
// and the demo pass envconfig.MapLookuper.
func LoadSettingsFrom(ctx context.Context, env envconfig.Lookuper, flags map[string]string) (Settings, error) {
	s, err := loadSettings(ctx, env, flags)
	if err != nil {
		return Settings{}, err
	}
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

func loadSettings(_ context.Context, env envconfig.Lookuper, flags map[string]string) (Settings, error) {
	s := Settings{origin: map[string]string{}}
	byFlag := map[string]setting{}
	for _, st := range settingsTable() {
		byFlag[st.flag] = st
		if err := s.set(st.field, st.def); err != nil {
			return Settings{}, fmt.Errorf("default of --%s: %w", st.flag, err)
		}
		name := st.envName()
		value, ok := env.Lookup(name)
		if old := st.deprecatedEnv; old != "" {
			if oldValue, oldOK := env.Lookup(old); oldOK {
				if ok {
					s.deprecations = append(s.deprecations, fmt.Sprintf("%s is deprecated and ignored: %s is set", old, name))
				} else {
					s.deprecations = append(s.deprecations, fmt.Sprintf("%s is deprecated: rename it %s", old, name))
					name, value, ok = old, oldValue, true
				}
			}
		}
		if !ok {
			continue
		}
		if err := s.set(st.field, value); err != nil {
			return Settings{}, fmt.Errorf("%s: %w", name, err)
		}
		s.origin[st.flag] = name
	}
	// Sorted, so that of several bad flags the same one is reported each run.
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		value := flags[name]
		st, ok := byFlag[name]
		if !ok {
			return Settings{}, fmt.Errorf("--%s is not a settings flag", name)
		}
		if err := s.set(st.field, value); err != nil {
			return Settings{}, fmt.Errorf("--%s: %w", name, err)
		}
		s.origin[name] = "--" + name
	}
	return s, nil
}

// Deprecations are warnings about deprecated environment variables the
// settings were read from, for the caller to log once it has a logger.
func (s Settings) Deprecations() []string { return slices.Clone(s.deprecations) }

// get returns a setting's value as a flag would show it.
func (s Settings) get(field string) string {
	v := reflect.ValueOf(s).FieldByName(field)
	if st, ok := v.Interface().(fmt.Stringer); ok {
		return st.String()
	}
	return v.String()
}

// set parses value into a setting: typed settings (Duration, Count) parse
// themselves, with their own errors.
func (s *Settings) set(field, value string) error {
	v := reflect.ValueOf(s).Elem().FieldByName(field)
	if u, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		return u.UnmarshalText([]byte(value))
	}
	v.SetString(value)
	return nil
}

// source names where a setting came from: "--log.format" or
// "KNEEWATCH_LOG_FORMAT"; for settings built in code or left at their
// default, both.
func (s Settings) source(flagName string) string {
	if o, ok := s.origin[flagName]; ok {
		return o
	}
	for _, st := range settingsTable() {
		if st.flag == flagName {
			return "--" + st.flag + " / " + st.envName()
		}
	}
	return flagName
}

// Validate checks every setting; each error names the flag or environment
// variable the bad value came from.
func (s Settings) Validate() error {
	var p strictyaml.List
	if _, port, err := net.SplitHostPort(s.ListenAddress); err != nil {
		p.Add(s.source("web.listen-address"), "%q is not a listen address (want host:port or :port): %v", s.ListenAddress, err)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		p.Add(s.source("web.listen-address"), "%q has no valid port (want host:port or :port, e.g. %s)", s.ListenAddress, DefaultListenAddress)
	}
	s.Logging().validate(&p, s.source)
	if s.EvaluationInterval <= 0 {
		p.Add(s.source("evaluation.interval"), "must be above 0, got %s", s.EvaluationInterval)
	}
	if s.EvaluationInterval > 0 && s.Window < 2*s.EvaluationInterval {
		p.Add(s.source("evaluation.window"), "%s is shorter than two evaluation intervals (%s): a rate needs two samples in the window", s.Window, 2*s.EvaluationInterval)
	}
	if s.TotalShards < 1 {
		p.Add(s.source("total-shards"), "must be at least 1, got %d", s.TotalShards)
	} else if s.Shard < 0 || s.Shard >= s.TotalShards {
		p.Add(s.source("shard"), "%d is not a shard of %d (want 0 to %d, from %s)", s.Shard, s.TotalShards, s.TotalShards-1, s.source("total-shards"))
	}
	if r := float64(s.AutoGoMemLimitRatio); !(r >= 0 && r <= 1) {
		p.Add(s.source("auto-gomemlimit.ratio"), "must be in [0, 1] (0 turns it off), got %s", s.AutoGoMemLimitRatio)
	}
	if s.ConfigFile == "" {
		p.Add(s.source("config.file"), "empty: name the kneewatch config file")
	}
	if s.WebConfigFile != "" {
		if err := web.Validate(s.WebConfigFile); err != nil {
			p.Add(s.source("web.config.file"), "%v", err)
		}
	}
	return p.Err()
}

// Logging is the settings' log level and format.
func (s Settings) Logging() Logging { return Logging{Level: s.LogLevel, Format: s.LogFormat} }

// Logger returns the slog logger the settings ask for, writing to w (see
// Logging.Logger). Call it on validated settings.
func (s Settings) Logger(w io.Writer) *slog.Logger { return s.Logging().Logger(w) }

// WebFlagConfig returns exporter-toolkit's listener settings for
// web.ListenAndServe.
func (s Settings) WebFlagConfig() *web.FlagConfig {
	addrs := []string{s.ListenAddress}
	file := s.WebConfigFile
	systemd := false
	return &web.FlagConfig{WebListenAddresses: &addrs, WebConfigFile: &file, WebSystemdSocket: &systemd}
}

// CheckSettings reports config values that conflict with the process
// settings: a scrape timeout must be shorter than the evaluation interval,
// or scrapes of one evaluation would overlap the next.
func (c *Config) CheckSettings(s Settings) error {
	var p strictyaml.List
	if c.Global.ScrapeTimeout >= s.EvaluationInterval {
		p.Add("global.scrape_timeout", "%s must be shorter than the evaluation interval (%s, from %s)", c.Global.ScrapeTimeout, s.EvaluationInterval, s.source("evaluation.interval"))
	}
	return p.Err()
}
