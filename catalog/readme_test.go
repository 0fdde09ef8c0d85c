package catalog

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// metricRow matches a README metric-table row: | `name` | type | labels | help |
var metricRow = regexp.MustCompile("^\\| `(kneewatch_[a-z0-9_]+)` \\| ([a-z]+) \\| ([a-z_, ]*) \\|")

func TestTheReadmeListsExactlyTheExportedMetrics(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ typ, labels string }
	listed := map[string]row{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := metricRow.FindStringSubmatch(line); m != nil {
			if _, dup := listed[m[1]]; dup {
				t.Errorf("README lists %s twice", m[1])
			}
			listed[m[1]] = row{m[2], strings.TrimSpace(m[3])}
		}
	}
	for _, d := range All() {
		r, ok := listed[d.Name]
		if !ok {
			t.Errorf("%s is exported but missing from the README's metric table", d.Name)
			continue
		}
		if r.typ != string(d.Type) {
			t.Errorf("README says %s is a %s, the code exports a %s", d.Name, r.typ, d.Type)
		}
		if want := strings.Join(d.Labels, ", "); r.labels != want {
			t.Errorf("README lists %s labels %q, the code exports %q", d.Name, r.labels, want)
		}
		delete(listed, d.Name)
	}
	for name := range listed {
		t.Errorf("README lists %s, which kneewatch does not export", name)
	}
}
