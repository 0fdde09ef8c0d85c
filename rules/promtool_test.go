package rules

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// promtool runs the real promtool with args in dir and returns its output,
// failing t when it exits non-zero.
func promtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	bin := testtools.Path(t, "promtool")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// specGroups extracts spec.groups of a rendered PrometheusRule as a rule file.
func specGroups(t *testing.T, object []byte) []byte {
	t.Helper()
	var obj struct {
		Spec struct {
			Groups []yaml.Node `yaml:"groups"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(object, &obj); err != nil {
		t.Fatal(err)
	}
	if len(obj.Spec.Groups) == 0 {
		t.Fatal("the PrometheusRule has no spec.groups")
	}
	out, err := yaml.Marshal(map[string]any{"groups": obj.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPromtoolCheckRulesPassesOnBothFormats(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := Render(&out, tc.opts, tc.format); err != nil {
				t.Fatal(err)
			}
			content := out.Bytes()
			if tc.format == FormatPrometheusRule {
				content = specGroups(t, content)
			}
			file := filepath.Join(dir, string(tc.format)+".yaml")
			if err := os.WriteFile(file, content, 0o644); err != nil {
				t.Fatal(err)
			}
			got := promtool(t, dir, "check", "rules", "--lint=all", "--lint-fatal", file)
			rules := 0
			groups, err := Generate(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range groups {
				rules += len(g.Rules)
			}
			if want := "SUCCESS: " + strconv.Itoa(rules) + " rules found"; !strings.Contains(got, want) {
				t.Errorf("promtool check rules said %q, want it to contain %q", got, want)
			}
		})
	}
}

// TestPromtoolUnitTests runs every checked-in rule unit test against the
// golden rule file (itself checked against the generator by
// TestGoldenFiles): each alert fires on its scenario with the expected
// labels and annotations and stays quiet on a near miss, and the recording
// rules compute the expected values.
func TestPromtoolUnitTests(t *testing.T) {
	if testing.Short() {
		t.Skip("runs promtool over about 5 s of rule evaluation")
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*", "*.test.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule unit tests under testdata: %v", err)
	}
	out := promtool(t, ".", append([]string{"test", "rules"}, files...)...)
	if n := strings.Count(out, "SUCCESS"); n != len(files) {
		t.Errorf("promtool reported %d successes for %d files:\n%s", n, len(files), out)
	}
}
