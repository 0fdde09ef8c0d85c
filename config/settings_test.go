package config

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/sethvargo/go-envconfig"
)

var ignoreOrigin = cmpopts.IgnoreUnexported(Settings{})

// clearSettingsEnv unsets every KNEEWATCH_ setting for the test, so a
// developer's environment cannot change the outcome.
func clearSettingsEnv(t *testing.T) {
	t.Helper()
	for _, s := range settingsTable() {
		unsetEnv(t, s.envName())
		if s.deprecatedEnv != "" {
			unsetEnv(t, s.deprecatedEnv)
		}
	}
}

func TestDefaultSettings(t *testing.T) {
	want := Settings{
		ListenAddress:       ":9847",
		LogLevel:            "info",
		LogFormat:           "logfmt",
		EvaluationInterval:  Duration(5 * time.Second),
		Window:              Duration(time.Minute),
		ConfigFile:          "kneewatch.yml",
		Shard:               0,
		TotalShards:         1,
		AutoGoMemLimitRatio: 0.9,
	}
	if diff := cmp.Diff(want, DefaultSettings(), ignoreOrigin); diff != "" {
		t.Errorf("DefaultSettings() (-want +got):\n%s", diff)
	}
	clearSettingsEnv(t)
	got, err := LoadSettings(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, ignoreOrigin); diff != "" {
		t.Errorf("LoadSettings with no env and no flags (-want +got):\n%s", diff)
	}
}

func TestEnvironmentOverridesDefaults(t *testing.T) {
	clearSettingsEnv(t)
	t.Setenv("KNEEWATCH_WEB_LISTEN_ADDRESS", "127.0.0.1:19847")
	t.Setenv("KNEEWATCH_LOG_LEVEL", "debug")
	t.Setenv("KNEEWATCH_LOG_FORMAT", "json")
	t.Setenv("KNEEWATCH_EVALUATION_INTERVAL", "10s")
	t.Setenv("KNEEWATCH_EVALUATION_WINDOW", "5m")
	t.Setenv("KNEEWATCH_CONFIG_FILE", "/etc/kneewatch/kneewatch.yml")
	t.Setenv("KNEEWATCH_WEB_CONFIG_FILE", filepath.Join("testdata", "web-config.yml"))
	t.Setenv("KNEEWATCH_SHARD", "2")
	t.Setenv("KNEEWATCH_TOTAL_SHARDS", "3")
	t.Setenv("KNEEWATCH_AUTO_GOMEMLIMIT_RATIO", "0.8")
	got, err := LoadSettings(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{
		ListenAddress:       "127.0.0.1:19847",
		LogLevel:            "debug",
		LogFormat:           "json",
		EvaluationInterval:  Duration(10 * time.Second),
		Window:              Duration(5 * time.Minute),
		ConfigFile:          "/etc/kneewatch/kneewatch.yml",
		WebConfigFile:       filepath.Join("testdata", "web-config.yml"),
		Shard:               2,
		TotalShards:         3,
		AutoGoMemLimitRatio: 0.8,
	}
	if diff := cmp.Diff(want, got, ignoreOrigin); diff != "" {
		t.Errorf("settings from environment (-want +got):\n%s", diff)
	}
}

// TestFlagsOverrideEnvironment goes through a real FlagSet, as
// cmd/kneewatch does: only flags the user typed override the environment.
func TestFlagsOverrideEnvironment(t *testing.T) {
	clearSettingsEnv(t)
	t.Setenv("KNEEWATCH_LOG_LEVEL", "debug")
	t.Setenv("KNEEWATCH_EVALUATION_WINDOW", "2m")
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	RegisterFlags(fs)
	check := fs.Bool("config.check", false, "validate and exit")
	t.Setenv("KNEEWATCH_TOTAL_SHARDS", "4")
	if err := fs.Parse([]string{"--log.level=warn", "--evaluation.interval", "15s", "--config.check", "--shard", "3"}); err != nil {
		t.Fatal(err)
	}
	set := SetFlags(fs)
	if diff := cmp.Diff(map[string]string{"log.level": "warn", "evaluation.interval": "15s", "shard": "3"}, set); diff != "" {
		t.Errorf("SetFlags (-want +got):\n%s", diff)
	}
	got, err := LoadSettings(context.Background(), set)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultSettings()
	want.LogLevel = "warn"                               // flag beats KNEEWATCH_LOG_LEVEL
	want.EvaluationInterval = Duration(15 * time.Second) // flag beats default
	want.Window = Duration(2 * time.Minute)              // env, not the flag's default of 1m
	want.Shard, want.TotalShards = 3, 4                  // flag and env together
	if diff := cmp.Diff(want, got, ignoreOrigin); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	if !*check {
		t.Error("--config.check was not parsed")
	}
}

func TestRegisterFlagsShowsDefaultsAndEnvironment(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	RegisterFlags(fs)
	f := fs.Lookup("web.listen-address")
	if f == nil {
		t.Fatal("no --web.listen-address flag")
	}
	if f.DefValue != ":9847" || !strings.Contains(f.Usage, "KNEEWATCH_WEB_LISTEN_ADDRESS") {
		t.Errorf("--web.listen-address default %q usage %q, want :9847 and the env var", f.DefValue, f.Usage)
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	want := []string{"auto-gomemlimit.ratio", "config.file", "evaluation.interval", "evaluation.window", "log.format", "log.level", "shard", "total-shards", "web.config.file", "web.listen-address"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("flags (-want +got):\n%s", diff)
	}
}

func TestBadSettingsNameWhereTheyCameFrom(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		flags map[string]string
		want  string
	}{
		{"a bad duration in the environment names the variable",
			map[string]string{"KNEEWATCH_EVALUATION_INTERVAL": "5x"}, nil,
			`KNEEWATCH_EVALUATION_INTERVAL: "5x" is not a duration (want a number and a unit, e.g. 500ms, 30s, 5m, 1h)`},
		{"a bad duration in a flag names the flag",
			nil, map[string]string{"evaluation.window": "abc"},
			`--evaluation.window: "abc" is not a duration (want a number and a unit, e.g. 500ms, 30s, 5m, 1h)`},
		{"an unknown log format from the environment names the variable",
			map[string]string{"KNEEWATCH_LOG_FORMAT": "text"}, nil,
			`KNEEWATCH_LOG_FORMAT: unknown log format "text" (want logfmt or json)`},
		{"an unknown log level from a flag names the flag, even with the variable set",
			map[string]string{"KNEEWATCH_LOG_LEVEL": "debug"}, map[string]string{"log.level": "verbose"},
			`--log.level: unknown log level "verbose" (want debug, info, warn or error)`},
		{"a window shorter than two intervals names the window's source",
			map[string]string{"KNEEWATCH_EVALUATION_WINDOW": "5s"}, nil,
			`KNEEWATCH_EVALUATION_WINDOW: 5s is shorter than two evaluation intervals (10s): a rate needs two samples in the window`},
		{"a zero evaluation interval is refused",
			nil, map[string]string{"evaluation.interval": "0s"},
			`--evaluation.interval: must be above 0, got 0s`},
		{"a listen address without port names the flag",
			nil, map[string]string{"web.listen-address": "9847"},
			`--web.listen-address: "9847" is not a listen address (want host:port or :port): address 9847: missing port in address`},
		{"a listen address with a bad port is refused",
			map[string]string{"KNEEWATCH_WEB_LISTEN_ADDRESS": ":http-alt"}, nil,
			`KNEEWATCH_WEB_LISTEN_ADDRESS: ":http-alt" has no valid port (want host:port or :port, e.g. :9847)`},
		{"an empty config file path is refused",
			map[string]string{"KNEEWATCH_CONFIG_FILE": ""}, nil,
			`KNEEWATCH_CONFIG_FILE: empty: name the kneewatch config file`},
		{"a missing web config file is reported",
			nil, map[string]string{"web.config.file": "testdata/no-such-web-config.yml"},
			`--web.config.file: open testdata/no-such-web-config.yml: no such file or directory`},
		{"a shard that is not a number names the flag",
			nil, map[string]string{"shard": "kneewatch-0"},
			`--shard: "kneewatch-0" is not a whole number`},
		{"total shards that are not a number name the variable",
			map[string]string{"KNEEWATCH_TOTAL_SHARDS": "two"}, nil,
			`KNEEWATCH_TOTAL_SHARDS: "two" is not a whole number`},
		{"zero total shards are refused",
			nil, map[string]string{"total-shards": "0"},
			`--total-shards: must be at least 1, got 0`},
		{"a shard past the last one is refused, naming both sources",
			map[string]string{"KNEEWATCH_TOTAL_SHARDS": "3"}, map[string]string{"shard": "3"},
			`--shard: 3 is not a shard of 3 (want 0 to 2, from KNEEWATCH_TOTAL_SHARDS)`},
		{"a negative shard is refused",
			nil, map[string]string{"shard": "-1"},
			`--shard: -1 is not a shard of 1 (want 0 to 0, from --total-shards / KNEEWATCH_TOTAL_SHARDS)`},
		{"a memory limit ratio that is not a number names the variable",
			map[string]string{"KNEEWATCH_AUTO_GOMEMLIMIT_RATIO": "90%"}, nil,
			`KNEEWATCH_AUTO_GOMEMLIMIT_RATIO: "90%" is not a number`},
		{"a memory limit ratio past the whole limit is refused",
			nil, map[string]string{"auto-gomemlimit.ratio": "1.5"},
			`--auto-gomemlimit.ratio: must be in [0, 1] (0 turns it off), got 1.5`},
		{"a flag that is not a setting is refused",
			nil, map[string]string{"config.check": "true"},
			`--config.check is not a settings flag`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearSettingsEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			_, err := LoadSettings(context.Background(), tt.flags)
			if err == nil || err.Error() != tt.want {
				t.Errorf("LoadSettings error:\n got: %v\nwant: %s", err, tt.want)
			}
		})
	}
}

func TestLoggerFollowsLevelAndFormat(t *testing.T) {
	var buf bytes.Buffer
	s := DefaultSettings()
	s.LogLevel, s.LogFormat = "warn", "json"
	log := s.Logger(&buf)
	log.Info("hidden")
	log.Warn("shown", "replica", "vllm-0")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one log line (info filtered out), got %q", buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("log line is not JSON: %v: %s", err, lines[0])
	}
	if rec["msg"] != "shown" || rec["replica"] != "vllm-0" {
		t.Errorf("log record = %v", rec)
	}
}

func TestWebFlagConfigCarriesTheListenerSettings(t *testing.T) {
	s := DefaultSettings()
	s.ListenAddress, s.WebConfigFile = "127.0.0.1:0", "web.yml"
	fc := s.WebFlagConfig()
	if diff := cmp.Diff([]string{"127.0.0.1:0"}, *fc.WebListenAddresses); diff != "" {
		t.Errorf("listen addresses (-want +got):\n%s", diff)
	}
	if *fc.WebConfigFile != "web.yml" || *fc.WebSystemdSocket {
		t.Errorf("web config file %q, systemd socket %v", *fc.WebConfigFile, *fc.WebSystemdSocket)
	}
}

func TestCheckSettingsWantsScrapesShorterThanTheInterval(t *testing.T) {
	c := DefaultConfig()
	s := DefaultSettings()
	if err := c.CheckSettings(s); err != nil {
		t.Fatalf("defaults conflict: %v", err)
	}
	c.Global.ScrapeTimeout = Duration(5 * time.Second)
	want := "global.scrape_timeout: 5s must be shorter than the evaluation interval (5s, from --evaluation.interval / KNEEWATCH_EVALUATION_INTERVAL)"
	if err := c.CheckSettings(s); err == nil || err.Error() != want {
		t.Errorf("CheckSettings error:\n got: %v\nwant: %s", err, want)
	}
}

func TestLoadSettingsFromAnyEnvironment(t *testing.T) {
	env := envconfig.MapLookuper(map[string]string{"KNEEWATCH_LOG_FORMAT": "json", "LOG_FORMAT": "ignored"})
	got, err := LoadSettingsFrom(context.Background(), env, map[string]string{"web.listen-address": "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if got.LogFormat != "json" || got.ListenAddress != "127.0.0.1:0" {
		t.Errorf("LogFormat %q ListenAddress %q, want json from the map and 127.0.0.1:0 from the flag", got.LogFormat, got.ListenAddress)
	}
}

// TestEveryFlagHasTheEnvironmentVariableNamedAfterIt walks every settings
// flag: the variable EnvName derives from its name sets the same value the
// flag does, and the flag's help names that variable. A setting added with
// an env name of its own could not pass.
func TestEveryFlagHasTheEnvironmentVariableNamedAfterIt(t *testing.T) {
	// A value per flag that differs from its default and passes validation.
	values := map[string]string{
		"web.listen-address":    "127.0.0.1:19847",
		"web.config.file":       filepath.Join("testdata", "web-config.yml"),
		"config.file":           "/etc/kneewatch/kneewatch.yml",
		"log.level":             "debug",
		"log.format":            "json",
		"evaluation.interval":   "10s",
		"evaluation.window":     "5m",
		"shard":                 "1",
		"total-shards":          "2",
		"auto-gomemlimit.ratio": "0.5",
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	RegisterFlags(fs)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		name := f.Name
		env := EnvName(name)
		t.Run(name+" and "+env, func(t *testing.T) {
			v, ok := values[name]
			if !ok {
				t.Fatalf("no test value for --%s: add one", name)
			}
			if !strings.Contains(f.Usage, "(env "+env+")") {
				t.Errorf("--%s help %q does not name %s", name, f.Usage, env)
			}
			extra := map[string]string{}
			if name == "shard" { // shard 1 needs two shards
				extra["KNEEWATCH_TOTAL_SHARDS"] = "2"
			}
			vars := map[string]string{env: v}
			for k, x := range extra {
				vars[k] = x
			}
			fromEnv, err := LoadSettingsFrom(context.Background(), envconfig.MapLookuper(vars), nil)
			if err != nil {
				t.Fatalf("%s=%s: %v", env, v, err)
			}
			flags := map[string]string{name: v}
			fromFlag, err := LoadSettingsFrom(context.Background(), envconfig.MapLookuper(extra), flags)
			if err != nil {
				t.Fatalf("--%s=%s: %v", name, v, err)
			}
			if diff := cmp.Diff(fromFlag, fromEnv, ignoreOrigin); diff != "" {
				t.Errorf("%s=%s differs from --%s=%s (-flag +env):\n%s", env, v, name, v, diff)
			}
			if cmp.Equal(DefaultSettings(), fromEnv, ignoreOrigin) {
				t.Errorf("%s=%s left every setting at its default", env, v)
			}
		})
	})
	if n != len(values) {
		t.Errorf("%d flags, %d test values", n, len(values))
	}
	if got := EnvName("evaluation.window"); got != "KNEEWATCH_EVALUATION_WINDOW" {
		t.Errorf("EnvName(evaluation.window) = %s", got)
	}
}

// TestDeprecatedEnvironmentNamesStillWorkWithAWarning keeps the names of
// kneewatch 0.1 (KNEEWATCH_WINDOW, KNEEWATCH_CONFIG,
// KNEEWATCH_LISTEN_ADDRESS) working for one more release, each with a
// warning, and the flag-named variable winning when both are set.
func TestDeprecatedEnvironmentNamesStillWorkWithAWarning(t *testing.T) {
	old := envconfig.MapLookuper(map[string]string{
		"KNEEWATCH_WINDOW":         "3m",
		"KNEEWATCH_CONFIG":         "/etc/kw.yml",
		"KNEEWATCH_LISTEN_ADDRESS": ":19000",
	})
	got, err := LoadSettingsFrom(context.Background(), old, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Window != Duration(3*time.Minute) || got.ConfigFile != "/etc/kw.yml" || got.ListenAddress != ":19000" {
		t.Errorf("deprecated names not applied: %+v", got)
	}
	want := []string{
		"KNEEWATCH_LISTEN_ADDRESS is deprecated: rename it KNEEWATCH_WEB_LISTEN_ADDRESS",
		"KNEEWATCH_CONFIG is deprecated: rename it KNEEWATCH_CONFIG_FILE",
		"KNEEWATCH_WINDOW is deprecated: rename it KNEEWATCH_EVALUATION_WINDOW",
	}
	if diff := cmp.Diff(want, got.Deprecations()); diff != "" {
		t.Errorf("deprecation warnings (-want +got):\n%s", diff)
	}

	both := envconfig.MapLookuper(map[string]string{"KNEEWATCH_WINDOW": "3m", "KNEEWATCH_EVALUATION_WINDOW": "4m"})
	got, err = LoadSettingsFrom(context.Background(), both, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Window != Duration(4*time.Minute) {
		t.Errorf("window %s, want 4m from KNEEWATCH_EVALUATION_WINDOW", got.Window)
	}
	if diff := cmp.Diff([]string{"KNEEWATCH_WINDOW is deprecated and ignored: KNEEWATCH_EVALUATION_WINDOW is set"}, got.Deprecations()); diff != "" {
		t.Errorf("deprecation warnings (-want +got):\n%s", diff)
	}

	_, err = LoadSettingsFrom(context.Background(), envconfig.MapLookuper(map[string]string{"KNEEWATCH_WINDOW": "5s"}), nil)
	if want := "KNEEWATCH_WINDOW: 5s is shorter than two evaluation intervals (10s): a rate needs two samples in the window"; err == nil || err.Error() != want {
		t.Errorf("error from a deprecated name:\n got: %v\nwant: %s", err, want)
	}
}
