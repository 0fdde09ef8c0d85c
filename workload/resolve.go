package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// Resolve turns a workload spec into a generator seeded by seed. The spec is
// a preset name (see PresetNames), a mix YAML file (.yaml or .yml, see
// LoadMixFile), or a trace file (.jsonl or .csv, see ReadTraceFile).
func Resolve(spec string, seed uint64) (*Generator, error) {
	if m, ok := Preset(spec); ok {
		return NewMixGenerator(m, spec, seed)
	}
	switch strings.ToLower(filepath.Ext(spec)) {
	case ".yaml", ".yml":
		m, err := LoadMixFile(spec)
		if err != nil {
			return nil, err
		}
		return NewMixGenerator(m, spec, seed)
	case ".jsonl", ".csv":
		t, err := ReadTraceFile(spec)
		if err != nil {
			return nil, err
		}
		return NewTraceGenerator(t)
	}
	return nil, fmt.Errorf("workload %q: not a preset (%s) nor a .yaml/.yml mix file or .jsonl/.csv trace",
		spec, strings.Join(PresetNames(), ", "))
}

// LoadMixFile reads a mix from YAML, for example:
//
//	name: support-chat
//	prompt: {kind: lognormal, median: 300, sigma: 0.7, max: 4096}
//	output: {kind: uniform, min: 50, max: 400}
//
// Unknown keys are errors, errors carry the file and line, and an unset name
// defaults to the file's base name.
func LoadMixFile(path string) (Mix, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Mix{}, fmt.Errorf("reading workload mix: %w", err)
	}
	m, err := ParseMix(b, path)
	if err != nil {
		return Mix{}, err
	}
	if m.Name == "" {
		m.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return m, nil
}

// ParseMix decodes and validates a mix YAML document strictly (see
// strictyaml). name is the source in errors.
func ParseMix(b []byte, name string) (Mix, error) {
	doc := strictyaml.Doc{Source: name, Data: b, Want: "workload mix"}
	var m Mix
	if err := doc.Decode(&m); err != nil {
		return Mix{}, err
	}
	if err := m.Validate(); err != nil {
		return Mix{}, doc.Locate(err)
	}
	return m, nil
}
