package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// The values table in README.md sits between these markers and is
// generated from values.yaml's helm-docs-style comments: `# -- text` above
// a key (continued by the `#` lines after it), `# @default -- text` for a
// default too long to print.
const (
	tableStart = "<!-- values table: generated from values.yaml's `# --` comments by go test ./deploy/helm/kneewatch/tests -update; do not edit -->"
	tableEnd   = "<!-- end of values table -->"
)

// valuesRow is one documented value.
type valuesRow struct{ key, def, desc string }

// valuesRows walks values.yaml's mapping keys in file order and returns a
// row for each with a `# --` comment: the dotted key, its default and the
// comment's text. A key without one is not a row (its children may be).
func valuesRows(t *testing.T, data []byte) []valuesRow {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var rows []valuesRow
	var walk func(prefix string, m *yaml.Node)
	walk = func(prefix string, m *yaml.Node) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			key := prefix + k.Value
			if desc, def, ok := helmDocsComment(k.HeadComment); ok {
				if def == "" {
					def = "`" + defaultText(t, v) + "`"
				}
				rows = append(rows, valuesRow{key, def, desc})
			}
			if v.Kind == yaml.MappingNode {
				walk(key+".", v)
			}
		}
	}
	walk("", doc.Content[0])
	return rows
}

// helmDocsComment extracts the `# --` description of a key's head comment
// and a `# @default --` override. Lines before `# --` (section comments)
// are not part of it.
func helmDocsComment(comment string) (desc, def string, ok bool) {
	var parts []string
	for _, line := range strings.Split(comment, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
		switch {
		case strings.HasPrefix(line, "-- "):
			ok, parts = true, []string{strings.TrimPrefix(line, "-- ")}
		case strings.HasPrefix(line, "@default -- "):
			def = strings.TrimPrefix(line, "@default -- ")
		case ok && line != "":
			parts = append(parts, line)
		case ok && line == "":
			ok = len(parts) > 0 // a blank comment line ends the description
		}
	}
	return strings.ReplaceAll(strings.Join(parts, " "), "|", `\|`), def, ok
}

// defaultText is a value as helm-docs prints it: JSON, on one line.
func defaultText(t *testing.T, v *yaml.Node) string {
	t.Helper()
	var x any
	if err := v.Decode(&x); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(strings.TrimSpace(b.String()), "|", `\|`)
}

func valuesTable(rows []valuesRow) string {
	var b strings.Builder
	b.WriteString("| key | default | description |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.key, r.def, r.desc)
	}
	return b.String()
}

// TestReadmeValuesTableIsGeneratedFromValues keeps README.md's values table
// what values.yaml's comments say; -update rewrites it.
func TestReadmeValuesTableIsGeneratedFromValues(t *testing.T) {
	values, err := os.ReadFile(filepath.Join(chartDir(), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	table := valuesTable(valuesRows(t, values))
	path := filepath.Join(chartDir(), "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start, end := strings.Index(text, tableStart), strings.Index(text, tableEnd)
	if start < 0 || end < start {
		t.Fatalf("README.md lacks the values table markers %q … %q", tableStart, tableEnd)
	}
	have := text[start+len(tableStart)+1 : end]
	if *update {
		text = text[:start+len(tableStart)+1] + table + text[end:]
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		have = table
	}
	if diff := cmp.Diff(table, have); diff != "" {
		t.Errorf("README.md's values table is not values.yaml's comments (-generated +README; rerun with -update):\n%s", diff)
	}
}

// TestHelmDocsCommentParsing pins the comment format on a small document.
func TestHelmDocsCommentParsing(t *testing.T) {
	rows := valuesRows(t, []byte(`# A section comment, not documentation.

# -- First line
# continued | with a pipe.
a: 1
b:
  # -- Nested.
  c: [x]
  # @default -- the defaults
  # -- Overridden default.
  d: {long: object}
undocumented: true
`))
	want := []valuesRow{
		{"a", "`1`", `First line continued \| with a pipe.`},
		{"b.c", "`[\"x\"]`", "Nested."},
		{"b.d", "the defaults", "Overridden default."},
	}
	if diff := cmp.Diff(want, rows, cmp.AllowUnexported(valuesRow{})); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}
