package knee

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
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

// Parse decodes and validates one knee profile document. Decoding is strict:
// unknown keys, wrong types, bad durations and extra documents are errors.
// source names the data in errors (usually the file path); it may be empty.
// Every error is prefixed "source: line N: " when the line is known, and
// validation failures are a *ValidationError listing every bad field.
func Parse(data []byte, source string) (*Profile, error) {
	var p Profile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New(prefix(source, 0) + "empty document, want a knee profile")
		}
		return nil, decodeError(source, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New(prefix(source, 0) + "more than one YAML document, want exactly one knee profile")
	}
	if err := p.Validate(); err != nil {
		var verr *ValidationError
		if errors.As(err, &verr) {
			var root yaml.Node
			// The document decoded once already, so this cannot fail.
			_ = yaml.Unmarshal(data, &root)
			for _, fe := range verr.Errors {
				fe.Source = source
				fe.Line = lineOf(&root, fe.Field)
			}
		}
		return nil, err
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

// decodeError rewrites yaml's errors ("yaml: line 3: …", or a TypeError
// listing "line 5: field x not found in type knee.Match") into one line per
// problem, each prefixed with the source and, where yaml gave a line, the
// field found on that line.
func decodeError(source string, data []byte, err error) error {
	var terr *yaml.TypeError
	if !errors.As(err, &terr) {
		return errors.New(prefix(source, 0) + strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var root yaml.Node
	// Type errors come after a successful parse, so this cannot fail.
	_ = yaml.Unmarshal(data, &root)
	lines := make([]string, len(terr.Errors))
	for i, e := range terr.Errors {
		line, msg := splitLine(e)
		if field := pathAt(&root, line); field != "" {
			msg = field + ": " + msg
		}
		lines[i] = prefix(source, line) + msg
	}
	return errors.New(strings.Join(lines, "\n"))
}

// splitLine splits yaml's "line 5: msg" into 5 and "msg".
func splitLine(e string) (int, string) {
	rest, ok := strings.CutPrefix(e, "line ")
	if !ok {
		return 0, e
	}
	num, msg, ok := strings.Cut(rest, ": ")
	line, err := strconv.Atoi(num)
	if !ok || err != nil {
		return 0, e
	}
	return line, msg
}

// prefix is "source: line N: " with the parts that are known.
func prefix(source string, line int) string {
	var b strings.Builder
	if source != "" {
		b.WriteString(source)
		b.WriteString(": ")
	}
	if line > 0 {
		fmt.Fprintf(&b, "line %d: ", line)
	}
	return b.String()
}
