package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestDockerfileMatchesTheChart reads the Dockerfile (docker cannot run
// here) and checks what the chart and the module rely on: the Go version of
// go.mod, a static binary, a non-root final user equal to the chart's
// runAsUser, and the chart's default port.
func TestDockerfileMatchesTheChart(t *testing.T) {
	dockerfile, err := os.ReadFile(filepath.Join(moduleRoot(), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(dockerfile)
	gomod, err := os.ReadFile(filepath.Join(moduleRoot(), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goDirective := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod)
	if goDirective == nil {
		t.Fatal("go.mod has no go directive")
	}
	goVersion := string(goDirective[1])
	var values struct {
		Service struct {
			Port int `yaml:"port"`
		} `yaml:"service"`
		PodSecurityContext struct {
			RunAsUser int `yaml:"runAsUser"`
		} `yaml:"podSecurityContext"`
	}
	data, err := os.ReadFile(filepath.Join(chartDir(), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}

	froms := regexp.MustCompile(`(?m)^FROM (\S+)`).FindAllStringSubmatch(text, -1)
	if len(froms) < 2 {
		t.Fatalf("want a build stage and a final stage, found FROM lines %v", froms)
	}
	if want := "golang:" + goVersion + "-"; !strings.HasPrefix(froms[0][1], want) {
		t.Errorf("build stage %s is not Go %s from go.mod", froms[0][1], goVersion)
	}
	users := regexp.MustCompile(`(?m)^USER (\d+)(:\d+)?$`).FindAllStringSubmatch(text, -1)
	if len(users) == 0 || users[len(users)-1][1] != strconv.Itoa(values.PodSecurityContext.RunAsUser) || users[len(users)-1][1] == "0" {
		t.Errorf("final USER %v is not the chart's non-root runAsUser %d", users, values.PodSecurityContext.RunAsUser)
	}
	for _, want := range []string{"CGO_ENABLED=0", "EXPOSE " + strconv.Itoa(values.Service.Port), "./cmd/kneewatch"} {
		if !strings.Contains(text, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}
