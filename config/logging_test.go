package config

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"
)

func TestEverySubcommandReadsTheLogFlagsLikeServe(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    Logging
		wantErr string
	}{
		{"the command's default level", nil, nil, Logging{Level: "warn", Format: "logfmt"}, ""},
		{"the environment under no flag", map[string]string{"KNEEWATCH_LOG_LEVEL": "debug", "KNEEWATCH_LOG_FORMAT": "json"}, nil,
			Logging{Level: "debug", Format: "json"}, ""},
		{"a flag over the environment", map[string]string{"KNEEWATCH_LOG_LEVEL": "debug"}, []string{"--log.level", "error"},
			Logging{Level: "error", Format: "logfmt"}, ""},
		{"a bad level from a flag names the flag", nil, []string{"--log.level=verbose"},
			Logging{}, `--log.level: unknown log level "verbose" (want debug, info, warn or error)`},
		{"a bad format from the environment names the variable", map[string]string{"KNEEWATCH_LOG_FORMAT": "text"}, nil,
			Logging{}, `KNEEWATCH_LOG_FORMAT: unknown log format "text" (want logfmt or json)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("sim", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			RegisterLogFlags(fs, "warn")
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			got, err := LoadLogging(envconfig.MapLookuper(tt.env), fs)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("LoadLogging = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestTheLogFlagsHelpNamesTheirVariables(t *testing.T) {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	var help bytes.Buffer
	fs.SetOutput(&help)
	RegisterLogFlags(fs, "info")
	fs.PrintDefaults()
	for _, want := range []string{"-log.level string", "(env KNEEWATCH_LOG_LEVEL)", "-log.format string", "(env KNEEWATCH_LOG_FORMAT)"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, help.String())
		}
	}
}
