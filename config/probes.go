package config

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	commonconfig "github.com/prometheus/common/config"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// ProbeAPI is the OpenAI-compatible endpoint a probe calls.
type ProbeAPI string

// The probe APIs.
const (
	ProbeAPICompletions ProbeAPI = "completions" // POST {openai_url}/completions
	ProbeAPIChat        ProbeAPI = "chat"        // POST {openai_url}/chat/completions
)

// Probes configures the low-rate synthetic streaming requests that measure
// client-side TTFT and TPOT per replica. The API key is read from a file or
// an environment variable, never written in the config file.
type Probes struct {
	// Enabled turns probes on. Default false: probes send real requests to
	// serving replicas, so they are opted into.
	Enabled bool `yaml:"enabled"`
	// Interval between probes of one replica (jittered). Default 30s.
	Interval Duration `yaml:"interval"`
	// Timeout of one probe; must be shorter than Interval so at most one
	// probe is in flight per replica. Default 10s.
	Timeout Duration `yaml:"timeout"`
	// PromptTokens is the approximate prompt length. Default 16.
	PromptTokens int `yaml:"prompt_tokens"`
	// MaxTokens is the max_tokens asked for; at least 2, since TPOT needs a
	// second token. Default 16.
	MaxTokens int `yaml:"max_tokens"`
	// IgnoreEOS asks the server to generate all MaxTokens (vLLM and SGLang
	// honour ignore_eos), so every probe measures the same length. Default true.
	IgnoreEOS bool `yaml:"ignore_eos"`
	// API is completions or chat. Default completions.
	API ProbeAPI `yaml:"api"`
	// APIKeyFile is a file holding the API key (surrounding whitespace is
	// trimmed). Relative to the config file's directory.
	APIKeyFile string `yaml:"api_key_file,omitempty"`
	// APIKeyEnv names an environment variable holding the API key.
	APIKeyEnv string `yaml:"api_key_env,omitempty"`
	// SkipPastKnee skips (and counts as skipped) probes of a replica past its
	// knee, so probes never add load to a saturated replica. Default true.
	SkipPastKnee bool `yaml:"skip_past_knee"`
	// SkipQueueGrowing skips probes while a replica's queue is growing. Default true.
	SkipQueueGrowing bool `yaml:"skip_queue_growing"`
	// LoadRatioCap caps each replica's probe tokens per second at this share
	// of its knee throughput; 0 < value < 1. Default 0.001 (0.1%).
	LoadRatioCap float64 `yaml:"load_ratio_cap"`
}

// DefaultProbes returns the probe defaults.
func DefaultProbes() Probes {
	return Probes{
		Interval:         Duration(30 * time.Second),
		Timeout:          Duration(10 * time.Second),
		PromptTokens:     16,
		MaxTokens:        16,
		IgnoreEOS:        true,
		API:              ProbeAPICompletions,
		SkipPastKnee:     true,
		SkipQueueGrowing: true,
		LoadRatioCap:     0.001,
	}
}

// envVarName is what a POSIX shell accepts as a variable name.
var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (pr Probes) validate(p *strictyaml.List) {
	const path = "probes"
	if pr.Interval <= 0 {
		p.Add(path+".interval", "must be above 0, got %s", pr.Interval)
	}
	switch {
	case pr.Timeout <= 0:
		p.Add(path+".timeout", "must be above 0, got %s", pr.Timeout)
	case pr.Interval > 0 && pr.Timeout >= pr.Interval:
		p.Add(path+".timeout", "%s must be shorter than probes.interval (%s), so at most one probe is in flight per replica", pr.Timeout, pr.Interval)
	}
	if pr.PromptTokens < 1 {
		p.Add(path+".prompt_tokens", "must be at least 1, got %d", pr.PromptTokens)
	}
	if pr.MaxTokens < 2 {
		p.Add(path+".max_tokens", "must be at least 2 (TPOT is measured between output tokens), got %d", pr.MaxTokens)
	}
	if pr.API != ProbeAPICompletions && pr.API != ProbeAPIChat {
		p.Add(path+".api", "unknown API %q (want completions or chat)", pr.API)
	}
	if pr.APIKeyFile != "" && pr.APIKeyEnv != "" {
		p.Add(path, "set api_key_file or api_key_env, not both")
	}
	if pr.APIKeyEnv != "" && !envVarName.MatchString(pr.APIKeyEnv) {
		p.Add(path+".api_key_env", "%q is not an environment variable name (give the variable's name, not the key)", pr.APIKeyEnv)
	}
	if !(pr.LoadRatioCap > 0 && pr.LoadRatioCap < 1) {
		p.Add(path+".load_ratio_cap", "%v is outside (0, 1) (0.001 caps probe tokens at 0.1%% of knee throughput)", pr.LoadRatioCap)
	}
}

// APIKey reads the probe API key from api_key_file or api_key_env, at call
// time so a rotated key is picked up. It returns "" when neither is set.
// Errors never hold the key. The Secret type masks it in YAML and JSON, not
// in fmt or slog: never log the value.
func (pr Probes) APIKey() (commonconfig.Secret, error) {
	switch {
	case pr.APIKeyFile != "":
		b, err := os.ReadFile(pr.APIKeyFile)
		if err != nil {
			return "", fmt.Errorf("probes.api_key_file: %w", err)
		}
		key := strings.TrimSpace(string(b))
		if key == "" {
			return "", fmt.Errorf("probes.api_key_file: %s is empty", pr.APIKeyFile)
		}
		return commonconfig.Secret(key), nil
	case pr.APIKeyEnv != "":
		key, ok := os.LookupEnv(pr.APIKeyEnv)
		if !ok || strings.TrimSpace(key) == "" {
			return "", fmt.Errorf("probes.api_key_env: environment variable %s is not set or empty", pr.APIKeyEnv)
		}
		return commonconfig.Secret(strings.TrimSpace(key)), nil
	default:
		return "", nil
	}
}
