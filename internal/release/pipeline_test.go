package release

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/registry"
	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// makeIn runs make in the module root with a clean environment for make's
// variables and returns its standard output.
func makeIn(t *testing.T, root string, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		required(t, "make is not installed")
	}
	cmd := exec.Command("make", append([]string{"-s", "--no-print-directory", "-C", root}, args...)...)
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "VERSION=")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func TestOneVersionEverywhere(t *testing.T) {
	root := moduleRoot()
	version, err := ReadVersion(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	chart, err := ReadChart(filepath.Join(root, "deploy", "helm", "kneewatch"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the chart's version and appVersion are VERSION and its image is tagged with it", func(t *testing.T) {
		if err := chart.Check(version); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the Makefile's VERSION is the file's", func(t *testing.T) {
		got, err := makeIn(t, root, "version")
		if err != nil || got != version {
			t.Errorf("make version: %q (%v), VERSION holds %q", got, err, version)
		}
	})
	t.Run("a release tag other than vVERSION is refused", func(t *testing.T) {
		if out, err := makeIn(t, root, "release-check", "TAG=v"+version); err != nil {
			t.Errorf("make release-check TAG=v%s: %v\n%s", version, err, out)
		}
		out, err := makeIn(t, root, "release-check", "TAG=v0.0.0-other")
		if want := "release tag 'v0.0.0-other' is not v" + version + ", the VERSION file's version"; err == nil || !strings.Contains(out, want) {
			t.Errorf("make release-check TAG=v0.0.0-other: %v\n%s\nwant the error %q", err, out, want)
		}
	})
	t.Run("goreleaser stamps the binaries as the Makefile does", func(t *testing.T) {
		var cfg struct {
			Builds []struct {
				Main    string   `yaml:"main"`
				Ldflags []string `yaml:"ldflags"`
			} `yaml:"builds"`
		}
		if err := readYAML(filepath.Join(root, ".goreleaser.yaml"), &cfg); err != nil {
			t.Fatal(err)
		}
		if len(cfg.Builds) != 1 || cfg.Builds[0].Main != "./cmd/kneewatch" {
			t.Fatalf("goreleaser builds %+v, want the one kneewatch build", cfg.Builds)
		}
		flags := strings.Join(cfg.Builds[0].Ldflags, " ")
		for _, want := range []string{"version.Version={{ .Version }}", "version.Revision={{ .FullCommit }}"} {
			if !strings.Contains(flags, "-X github.com/prometheus/common/"+want) {
				t.Errorf("goreleaser's ldflags %q do not set %s", flags, want)
			}
		}
	})
}

// TestWorkflowsPassActionlint lints the workflows with actionlint and,
// through it, every run: script with shellcheck, which actionlint would
// otherwise skip without a word when shellcheck is not on PATH: it is
// passed explicitly, and a script shellcheck flags must fail the lint. The
// workflows have no Python steps, so pyflakes is off by name, not by
// absence.
func TestWorkflowsPassActionlint(t *testing.T) {
	actionlint := testtools.Path(t, "actionlint")
	shellcheck := testtools.SystemPath(t, "shellcheck", "apt-get install -y shellcheck")
	root := moduleRoot()
	workflows, err := filepath.Glob(filepath.Join(root, ".github", "workflows", "*.yml"))
	if err != nil || len(workflows) < 2 {
		t.Fatalf("want the CI and release workflows, found %v (%v)", workflows, err)
	}
	lint := func(files ...string) (string, error) {
		out, err := exec.Command(actionlint, append([]string{"-color=false", "-verbose", "-shellcheck=" + shellcheck, "-pyflakes="}, files...)...).CombinedOutput()
		return string(out), err
	}
	out, err := lint(workflows...)
	t.Logf("actionlint -shellcheck=%s %s:\n%s", shellcheck, strings.Join(workflows, " "), out)
	if err != nil {
		t.Fatalf("actionlint: %v", err)
	}
	if strings.Contains(out, `Rule "shellcheck" was disabled`) {
		t.Fatalf("actionlint ran without shellcheck:\n%s", out)
	}
	dir := t.TempDir()
	for _, tc := range []struct{ name, step, want string }{
		{"a workflow reading an undefined step output", "echo ${{ steps.nothing.outputs.x }}", `property "nothing" is not defined`},
		// SC2086: an unquoted variable splits and globs.
		{"a run: script shellcheck flags", "ls $HOME/x", "shellcheck reported issue in this script: SC2086"},
	} {
		bad := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yml")
		if err := os.WriteFile(bad, []byte("on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: "+tc.step+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := lint(bad); err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("actionlint passed %s (%v):\n%s", tc.name, err, out)
		} else {
			t.Logf("actionlint on %s fails as it must: %s", tc.name, tc.want)
		}
	}
}

func TestGoreleaserCheck(t *testing.T) {
	goreleaser := testtools.Path(t, "goreleaser")
	root := moduleRoot()
	cmd := exec.Command(goreleaser, "check", "--config", ".goreleaser.yaml")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	t.Logf("goreleaser check:\n%s", out)
	if err != nil {
		t.Fatalf("goreleaser check: %v", err)
	}
	// The check can fail: an unknown key.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 2\nbuilds:\n  - id: x\n    binaryy: kneewatch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(goreleaser, "check", "--config", bad)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("goreleaser check passed a config with an unknown key:\n%s", out)
	}
}

// TestDockerfileBuildsTheSameImage reads the Dockerfile (docker cannot run
// here) and checks it declares what `make image` builds: user, entrypoint,
// command, port, binary path and labels. Its base, distroless/static,
// brings the same CA certificates, tzdata, passwd, environment and working
// directory.
func TestDockerfileBuildsTheSameImage(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(moduleRoot(), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	final := text[strings.LastIndex(text, "\nFROM "):]
	license, err := ReadLicense(filepath.Join(moduleRoot(), "LICENSE"), "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(final, "FROM gcr.io/distroless/static-debian12:nonroot") {
		t.Errorf("the final stage is not distroless/static nonroot:\n%s", final)
	}
	jsonArray := func(instr string) []string {
		m := regexp.MustCompile(`(?m)^` + instr + ` (\[.*\])$`).FindStringSubmatch(final)
		if m == nil {
			t.Errorf("no %s [...] in the final stage", instr)
			return nil
		}
		var v []string
		if err := json.Unmarshal([]byte(m[1]), &v); err != nil {
			t.Errorf("%s: %v", instr, err)
		}
		return v
	}
	if diff := cmp.Diff(Entrypoint, jsonArray("ENTRYPOINT")); diff != "" {
		t.Errorf("ENTRYPOINT (-image +Dockerfile):\n%s", diff)
	}
	if diff := cmp.Diff(Cmd, jsonArray("CMD")); diff != "" {
		t.Errorf("CMD (-image +Dockerfile):\n%s", diff)
	}
	for _, want := range []string{
		"USER " + strconv.Itoa(UID) + ":" + strconv.Itoa(GID),
		"EXPOSE " + strconv.Itoa(Port),
		"COPY --from=build /out/kneewatch " + BinaryPath,
		LabelSource + `="` + Source + `"`,
		LabelRevision + `="${REVISION}"`,
		LabelVersion + `="${VERSION}"`,
		LabelLicenses + `="` + license.SPDX + `"`,
		"COPY LICENSE NOTICE " + LicenseDir + "/",
		"COPY --from=build /out/third_party " + ThirdPartyDir + "/",
		LabelTitle + `="kneewatch"`,
	} {
		if !strings.Contains(final, want) {
			t.Errorf("the Dockerfile's final stage lacks %q", want)
		}
	}
	var values struct {
		Image struct {
			Repository string `yaml:"repository"`
		} `yaml:"image"`
	}
	raw, err := os.ReadFile(filepath.Join(moduleRoot(), "deploy", "helm", "kneewatch", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "RUN go run ./cmd/kneewatch-release licenses --binary linux/amd64=/out/kneewatch --out /out/third_party") {
		t.Errorf("the Dockerfile's build stage does not write the third-party licenses the final stage copies")
	}
	if !strings.Contains(text, "-t "+values.Image.Repository+":") {
		t.Errorf("the Dockerfile's build command does not tag the chart's repository %s", values.Image.Repository)
	}
}

// TestChartPackage runs `make chart` as the release workflow does and
// reads the package: named and versioned after VERSION, naming the image
// the release pushes, without the chart's Go tests.
func TestChartPackage(t *testing.T) {
	helm := testtools.Path(t, "helm")
	root := moduleRoot()
	version, err := ReadVersion(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	// TOOLS: the helm the test found, which make would otherwise build.
	if out, err := makeIn(t, root, "chart", "CHART_DIST="+dist, "TOOLS="+filepath.Dir(helm)); err != nil {
		t.Fatalf("make chart: %v\n%s", err, out)
	}
	pkg := filepath.Join(dist, "kneewatch-"+version+".tgz")
	f, err := os.Open(pkg)
	if err != nil {
		t.Fatalf("make chart did not write the package of VERSION %s: %v", version, err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = data
	}
	for name := range files {
		if strings.HasSuffix(name, ".go") || strings.Contains(name, "/tests/") {
			t.Errorf("the package holds %s, which .helmignore leaves out", name)
		}
	}
	extracted := t.TempDir()
	for _, name := range []string{"kneewatch/Chart.yaml", "kneewatch/values.yaml"} {
		if files[name] == nil {
			t.Fatalf("the package has no %s", name)
		}
		if err := os.WriteFile(filepath.Join(extracted, filepath.Base(name)), files[name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	chart, err := ReadChart(extracted)
	if err != nil {
		t.Fatal(err)
	}
	if err := chart.Check(version); err != nil {
		t.Error(err)
	}
	t.Logf("%s: %d files, names image %s", filepath.Base(pkg), len(files), chart.Image())

	// The release workflow's `helm push` to an OCI registry, here
	// go-containerregistry's on loopback; a user's `helm template` of the
	// pushed chart names the image the release pushes.
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo := "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/charts"
	env := helmHome(t)
	out, err := runTool(env, helm, "push", pkg, repo, "--plain-http")
	if err != nil {
		t.Fatalf("helm push: %v\n%s", err, out)
	}
	t.Logf("helm push %s %s:\n%s", filepath.Base(pkg), repo, out)
	out, err = runTool(env, helm, "template", "kneewatch", repo+"/kneewatch", "--version", version, "--plain-http")
	if err != nil {
		t.Fatalf("helm template of the pushed chart: %v\n%s", err, out)
	}
	if want := `image: "` + chart.Image() + `"`; !strings.Contains(out, want) {
		t.Errorf("the pushed chart's render lacks %s", want)
	}
}

// helmHome keeps helm's cache, config and registry logins out of the
// user's home.
func helmHome(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	return []string{"HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(home, "config"), "HELM_DATA_HOME=" + filepath.Join(home, "data")}
}

func runTool(env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
