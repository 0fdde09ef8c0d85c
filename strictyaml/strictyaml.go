// Package strictyaml decodes kneewatch's YAML files (the config file, knee
// profiles, workload mixes, simulator presets) one way: one document, unknown
// keys are errors, and every problem, whether the decoder's or a validation
// rule's, is a *FieldError that names the file, the line and the field:
//
//	kneewatch.yml: line 12: targets[0].replcia: unknown key "replcia" (did you mean "replica"?); the keys here are dcgm, http_client, …
//	llama.yaml: line 15: slo.quantile: must be in (0,1), got 1.5
//
// Decoding reports what the YAML decoder found, by line, with the field on
// that line named; validation reports by field, and Locate adds the line.
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FieldError is one problem in a YAML document.
type FieldError struct {
	Source  string // the file it came from; empty for a value built in code
	Line    int    // 1-based line of the field (or of its nearest parent); 0 when unknown
	Field   string // the YAML path, e.g. "points[2].concurrency"; empty when unknown
	Message string
}

// Error is "source: line N: field: message", without the parts not known.
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Source != "" {
		b.WriteString(e.Source)
		b.WriteString(": ")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Errorf is a FieldError about field, to be located later (see Locate).
func Errorf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// List is every problem found in one document, one a line, in the order
// found, so that one run reports every mistake.
type List struct {
	Errors []*FieldError
}

func (l *List) Error() string {
	lines := make([]string, len(l.Errors))
	for i, fe := range l.Errors {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}

// Add appends a problem about field.
func (l *List) Add(field, format string, args ...any) {
	l.Errors = append(l.Errors, Errorf(field, format, args...))
}

// Err is the list as an error, or nil when it is empty.
func (l *List) Err() error {
	if l == nil || len(l.Errors) == 0 {
		return nil
	}
	return l
}

// Doc is one YAML document to decode.
type Doc struct {
	Source string // names the document in errors: a file path, "override"; may be empty
	Data   []byte
	// Want names what the document holds, for the errors about the document
	// itself: "empty document, want a knee profile".
	Want string
	// EmptyOK makes an empty document (or one of comments only) valid: the
	// value decoded into keeps what it held (its defaults).
	EmptyOK bool
}

// Decode decodes the one document into out, rejecting keys out has no field
// for, wrong types, and a second document. It returns nil or a *List.
func (d Doc) Decode(out any) error {
	dec := yaml.NewDecoder(bytes.NewReader(d.Data))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		if errors.Is(err, io.EOF) {
			if d.EmptyOK {
				return nil
			}
			return d.list(&FieldError{Message: "empty document, want a " + d.Want})
		}
		return d.decodeError(err, reflect.TypeOf(out))
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return d.decodeError(err, nil)
	default:
		return d.list(&FieldError{Line: next.Line, Message: "a second YAML document, want exactly one " + d.Want})
	}
}

func (d Doc) list(errs ...*FieldError) *List {
	for _, fe := range errs {
		fe.Source = d.Source
	}
	return &List{Errors: errs}
}

// decodeError turns the decoder's errors ("yaml: line 3: …" for syntax, a
// *yaml.TypeError listing "line 5: field x not found in type knee.Match"
// for the rest) into FieldErrors with the field found on each line. An
// unknown key is told with the keys its mapping takes, read from out, the
// type decoded into (see unknownKeyMessage).
func (d Doc) decodeError(err error, out reflect.Type) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		line, msg := splitLine(strings.TrimPrefix(err.Error(), "yaml: "))
		return d.list(&FieldError{Line: line, Message: msg})
	}
	root := d.root()
	errs := make([]*FieldError, len(te.Errors))
	for i, e := range te.Errors {
		line, msg := splitLine(e)
		field := pathAt(root, line)
		errs[i] = &FieldError{Line: line, Field: field, Message: unknownKeyMessage(msg, out, field)}
	}
	return d.list(errs...)
}

// root is the first document as a node tree. Only called once the document
// has parsed, so it cannot fail.
func (d Doc) root() *yaml.Node {
	var root yaml.Node
	_ = yaml.NewDecoder(bytes.NewReader(d.Data)).Decode(&root)
	return &root
}

// Locate gives every *FieldError in err (a *FieldError, a *List, or errors
// joined or wrapped around them) the document's source and the line of its
// field, and returns err. An error that is no FieldError is returned as a
// FieldError with the source and its text, so every line reads alike.
func (d Doc) Locate(err error) error {
	if err == nil {
		return nil
	}
	var root *yaml.Node
	located := &List{}
	var walk func(error)
	walk = func(e error) {
		switch x := e.(type) {
		case interface{ Unwrap() []error }: // errors.Join
			for _, inner := range x.Unwrap() {
				walk(inner)
			}
			return
		case *List:
			for _, fe := range x.Errors {
				walk(fe)
			}
			return
		}
		var fe *FieldError
		if !errors.As(e, &fe) {
			fe = &FieldError{Message: e.Error()}
		}
		if fe.Line == 0 && fe.Field != "" {
			if root == nil {
				root = d.root()
			}
			fe.Line = lineOf(root, fe.Field)
		}
		fe.Source = d.Source
		located.Errors = append(located.Errors, fe)
	}
	walk(err)
	return located
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

// ErrorAt is a problem at n's line, for a type's UnmarshalYAML. As a
// *yaml.TypeError it is collected with the decoder's own problems instead of
// stopping the decode, and Decode names the field on that line.
func ErrorAt(n *yaml.Node, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: ", n.Line) + fmt.Sprintf(format, args...)}}
}

// KindName names a YAML node's kind the way a user would.
func KindName(n *yaml.Node) string {
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
