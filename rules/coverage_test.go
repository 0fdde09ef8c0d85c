package rules

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// ruleTestFile is the part of a promtool rule unit test file this test reads.
type ruleTestFile struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name       string `yaml:"name"`
		AlertTests []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels      map[string]string `yaml:"exp_labels"`
				ExpAnnotations map[string]string `yaml:"exp_annotations"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func readRuleTest(t *testing.T, path string) ruleTestFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleTestFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}

// TestEveryAlertHasAFiringTestAndANearMiss fails when an alert has no unit
// test file, no test where it fires with its labels and every annotation
// asserted, or no test where it stays quiet.
func TestEveryAlertHasAFiringTestAndANearMiss(t *testing.T) {
	groups, err := Generate(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var generated []string
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				generated = append(generated, r.Alert)
			}
		}
	}
	if !slices.Equal(generated, Alerts()) {
		t.Fatalf("Generate writes alerts %v, Alerts() lists %v", generated, Alerts())
	}
	for _, name := range Alerts() {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", "alerts", name+".test.yaml")
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("alert %s has no unit test: %v", name, err)
			}
			f := readRuleTest(t, path)
			if !slices.Equal(f.RuleFiles, []string{"../rules.golden.yaml"}) {
				t.Errorf("%s tests %v, want the golden rule file ../rules.golden.yaml", path, f.RuleFiles)
			}
			var fires, quiet bool
			for _, tg := range f.Tests {
				for _, at := range tg.AlertTests {
					if at.Alertname != name {
						continue
					}
					if len(at.ExpAlerts) == 0 {
						quiet = true
					}
					for _, a := range at.ExpAlerts {
						fires = true
						if a.ExpLabels["severity"] == "" {
							t.Errorf("%s (%s): an expected alert does not assert its severity label", path, tg.Name)
						}
						for _, k := range []string{"summary", "description", "runbook_url", "dashboard_url"} {
							if a.ExpAnnotations[k] == "" {
								t.Errorf("%s (%s): an expected alert does not assert its %s annotation", path, tg.Name, k)
							}
						}
					}
				}
			}
			if !fires {
				t.Errorf("%s has no test where %s fires", path, name)
			}
			if !quiet {
				t.Errorf("%s has no near-miss test where %s stays quiet", path, name)
			}
		})
	}
	// And no test file for an alert that no longer exists.
	files, _ := filepath.Glob(filepath.Join("testdata", "alerts", "*.test.yaml"))
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".test.yaml"); !slices.Contains(Alerts(), name) {
			t.Errorf("%s tests %s, which the rules no longer have", f, name)
		}
	}
}
