package knee

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// Load reads, decodes and validates the knee profile at path. Errors name the
// file, the line and the field.
func Load(path string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("knee profile: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes and validates one knee profile document. Decoding is strict
// (see strictyaml): unknown keys, wrong types, bad durations and extra
// documents are errors. source names the data in errors (usually the file
// path); it may be empty. Every error is a *strictyaml.List, one problem a
// line, each "source: line N: field: message" with the parts that are known.
func Parse(data []byte, source string) (*Profile, error) {
	doc := strictyaml.Doc{Source: source, Data: data, Want: "knee profile"}
	var p Profile
	if err := doc.Decode(&p); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, doc.Locate(err)
	}
	return &p, nil
}

// Marshal encodes the profile as YAML. It does not validate: call Validate
// first when the profile was built in code.
func (p *Profile) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	if err := p.Save(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Save writes the profile as YAML to w. Parse reads back an equal profile.
func (p *Profile) Save(w io.Writer) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(p); err != nil {
		return fmt.Errorf("encoding knee profile: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("encoding knee profile: %w", err)
	}
	return nil
}
