package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// decodeStrict decodes one YAML document into out, rejecting keys that out
// has no field for. An empty document leaves out as it was (its defaults).
func decodeStrict(data []byte, out any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return err
	default:
		return lineError(&next, "a second YAML document; the config file holds exactly one")
	}
}

// fileError prefixes each decoding problem with the file name, one problem a
// line: "kneewatch.yml: line 12: field replcia not found in type config.Target".
func fileError(file string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		errs := make([]error, len(te.Errors))
		for i, e := range te.Errors {
			errs[i] = fmt.Errorf("%s: %s", file, e)
		}
		return errors.Join(errs...)
	}
	// Syntax errors come as "yaml: line 3: …".
	return fmt.Errorf("%s: %s", file, strings.TrimPrefix(err.Error(), "yaml: "))
}

// lineError is a decoding problem at n's line. As a *yaml.TypeError it is
// collected with the decoder's own problems instead of stopping the decode.
func lineError(n *yaml.Node, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: ", n.Line) + fmt.Sprintf(format, args...)}}
}

// kindName names a YAML node kind the way a user would.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	default:
		return "value"
	}
}
