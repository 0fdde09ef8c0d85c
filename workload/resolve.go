package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
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

// ParseMix decodes and validates a mix YAML document strictly. name is used
// in errors.
func ParseMix(b []byte, name string) (Mix, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var m Mix
	if err := dec.Decode(&m); err != nil {
		if errors.Is(err, io.EOF) {
			return Mix{}, fmt.Errorf("%s: empty workload mix", name)
		}
		return Mix{}, yamlError(name, err)
	}
	if err := m.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			if line := lineOf(b, fe.Field); line > 0 {
				return Mix{}, fmt.Errorf("%s:%d: %w", name, line, err)
			}
		}
		return Mix{}, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

// lineOf finds the line of a dotted key path ("prompt.median") in a YAML
// document, falling back to the deepest parent present (a missing field is
// reported at its parent); 0 when nothing matches.
func lineOf(b []byte, path string) int {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return 0
	}
	node, line := doc.Content[0], 0
	for _, key := range strings.Split(path, ".") {
		if node.Kind != yaml.MappingNode {
			return line
		}
		found := false
		for i := 0; i+1 < len(node.Content); i += 2 {
			if node.Content[i].Value == key {
				line, node, found = node.Content[i].Line, node.Content[i+1], true
				break
			}
		}
		if !found {
			return line
		}
	}
	return line
}

// yamlError rewrites the decoder's "line N: msg" errors as "name:N: msg",
// one per line, so they read like the rest of the file errors.
func yamlError(name string, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("%s: %w", name, err)
	}
	msgs := make([]string, len(te.Errors))
	for i, e := range te.Errors {
		if rest, ok := strings.CutPrefix(e, "line "); ok {
			if n, msg, ok := strings.Cut(rest, ": "); ok {
				e = n + ": " + msg
				msgs[i] = name + ":" + e
				continue
			}
		}
		msgs[i] = name + ": " + e
	}
	return errors.New(strings.Join(msgs, "\n"))
}
