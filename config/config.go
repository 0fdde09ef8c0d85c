package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	commonconfig "github.com/prometheus/common/config"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// Config is the kneewatch config file (kneewatch.yml). See example.yml for
// every field with its default.
type Config struct {
	// Global settings for every target.
	Global Global `yaml:"global"`
	// Profiles are the knee profiles targets can refer to by name. After
	// Load it also holds one entry per file in global.profiles_dir, and
	// every File is resolved against the config file's directory.
	Profiles []Profile `yaml:"profiles,omitempty"`
	// Targets are the statically configured replicas.
	Targets []Target `yaml:"targets,omitempty"`
	// Kubernetes, when present, discovers replicas from pods.
	Kubernetes *Kubernetes `yaml:"kubernetes,omitempty"`
	// Probes configures synthetic streaming probes.
	Probes Probes `yaml:"probes"`
	// Alerts configures the generated alert rules.
	Alerts Alerts `yaml:"alerts"`
}

// DefaultConfig returns a config with every default set and nothing to watch.
func DefaultConfig() Config {
	return Config{
		Global: DefaultGlobal(),
		Probes: DefaultProbes(),
		Alerts: DefaultAlerts(),
	}
}

// UnmarshalYAML sets the defaults, then decodes the document over them.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	*c = DefaultConfig()
	type fields Config
	type Config fields
	return unmarshal((*Config)(c))
}

// Load reads, decodes and validates the config file at path. Relative paths
// inside it are resolved against its directory.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes and validates a config file's contents. path names the file
// in errors and anchors relative paths; "" means the working directory.
// Besides Validate's checks, Parse reads global.profiles_dir and checks that
// every profile file exists.
func Parse(data []byte, path string) (*Config, error) {
	name := path
	if name == "" {
		name = "config"
	}
	// An empty file is the defaults, which then fail validation for
	// having nothing to watch.
	doc := strictyaml.Doc{Source: name, Data: data, Want: "kneewatch config", EmptyOK: true}
	c := DefaultConfig()
	if err := doc.Decode(&c); err != nil {
		return nil, err
	}
	dir := "."
	if path != "" {
		dir = filepath.Dir(path)
	}
	c.resolvePaths(dir)

	var p strictyaml.List
	c.addProfilesDir(&p)
	invalid := c.Validate()
	checkProfileFiles(c.Profiles, &p)
	if err := errors.Join(p.Err(), invalid); err != nil {
		return nil, doc.Locate(err)
	}
	return &c, nil
}

// Validate checks every field and reports every problem, one a line, each
// naming its field path (targets[2].engine: …). It does not touch the
// filesystem.
func (c *Config) Validate() error {
	var p strictyaml.List
	c.Global.validate(&p)
	validateProfiles(c.Profiles, &p)
	if len(c.Targets) == 0 && c.Kubernetes == nil {
		p.Add("targets", "nothing to watch: list targets, or configure kubernetes discovery")
	}
	validateTargets(c.Targets, c.Profiles, c.Global.ExternalLabels, &p)
	if c.Kubernetes != nil {
		c.Kubernetes.validate(&p)
	}
	c.Probes.validate(&p)
	c.Alerts.validate(&p)
	return p.Err()
}

// resolvePaths makes every file path in the config relative to dir, as
// Prometheus does, unless it is absolute.
func (c *Config) resolvePaths(dir string) {
	c.Global.ProfilesDir = commonconfig.JoinDir(dir, c.Global.ProfilesDir)
	for i := range c.Profiles {
		c.Profiles[i].File = commonconfig.JoinDir(dir, c.Profiles[i].File)
	}
	for i := range c.Targets {
		c.Targets[i].HTTPClient.SetDirectory(dir)
		if c.Targets[i].DCGM != nil {
			c.Targets[i].DCGM.HTTPClient.SetDirectory(dir)
		}
	}
	if k := c.Kubernetes; k != nil {
		k.Kubeconfig = commonconfig.JoinDir(dir, k.Kubeconfig)
		k.HTTPClient.SetDirectory(dir)
	}
	c.Probes.APIKeyFile = commonconfig.JoinDir(dir, c.Probes.APIKeyFile)
}

// addProfilesDir appends one profile per file in global.profiles_dir.
func (c *Config) addProfilesDir(p *strictyaml.List) {
	if c.Global.ProfilesDir == "" {
		return
	}
	found, err := profilesInDir(c.Global.ProfilesDir)
	if err != nil {
		p.Add("global.profiles_dir", "%v", err)
		return
	}
	listed := map[string]int{}
	for i, pr := range c.Profiles {
		listed[pr.Name] = i
	}
	for _, pr := range found {
		if i, dup := listed[pr.Name]; dup {
			p.Add("global.profiles_dir", "%s would be profile %q, which profiles[%d] already names", pr.File, pr.Name, i)
			continue
		}
		c.Profiles = append(c.Profiles, pr)
	}
}
