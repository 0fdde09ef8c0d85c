package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestReadmeDocumentsEveryValue keeps the chart README's values table in
// step with values.yaml: every value is documented (itself or a parent),
// and every documented key exists.
func TestReadmeDocumentsEveryValue(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir(), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	var leaves, all []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			path := prefix + k
			all = append(all, path)
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
				walk(path+".", sub)
				continue
			}
			leaves = append(leaves, path)
		}
	}
	walk("", values)

	readme, err := os.ReadFile(filepath.Join(chartDir(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Za-z0-9.]+)` \\|")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		documented = append(documented, m[1])
	}
	if len(documented) == 0 {
		t.Fatal("README.md has no values table")
	}
	for _, leaf := range leaves {
		parts := strings.Split(leaf, ".")
		found := false
		for i := len(parts); i > 0 && !found; i-- {
			found = slices.Contains(documented, strings.Join(parts[:i], "."))
		}
		if !found {
			t.Errorf("value %s is not in README.md's values table", leaf)
		}
	}
	for _, key := range documented {
		if !slices.Contains(all, key) {
			t.Errorf("README.md documents %s, which values.yaml lacks", key)
		}
	}
}
