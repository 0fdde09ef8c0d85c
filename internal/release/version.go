package release

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"go.yaml.in/yaml/v3"
)

// semver is a release version as the VERSION file, the chart and the image
// tag spell it: no leading "v" (the git tag adds one).
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$`)

// ReadVersion reads the VERSION file, the one place the release version is
// written: the Makefile stamps it into the binary, the image is tagged with
// it, and the chart's version and appVersion must equal it.
func ReadVersion(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(data))
	if !semver.MatchString(v) {
		return "", fmt.Errorf("%s: %q is not a version like 1.2.3", path, v)
	}
	return v, nil
}

// Chart is what a release reads from the Helm chart: its versions and the
// image it names with default values.
type Chart struct {
	Dir        string
	Version    string
	AppVersion string
	// Repository and Tag are values.yaml's image.repository and image.tag.
	Repository string
	Tag        string
}

// ReadChart reads Chart.yaml and values.yaml from a chart directory.
func ReadChart(dir string) (Chart, error) {
	c := Chart{Dir: dir}
	var meta struct {
		Version    string `yaml:"version"`
		AppVersion string `yaml:"appVersion"`
	}
	if err := readYAML(filepath.Join(dir, "Chart.yaml"), &meta); err != nil {
		return c, err
	}
	var values struct {
		Image struct {
			Repository string `yaml:"repository"`
			Tag        string `yaml:"tag"`
		} `yaml:"image"`
	}
	if err := readYAML(filepath.Join(dir, "values.yaml"), &values); err != nil {
		return c, err
	}
	c.Version, c.AppVersion = meta.Version, meta.AppVersion
	c.Repository, c.Tag = values.Image.Repository, values.Image.Tag
	return c, nil
}

func readYAML(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Check fails unless the chart is released at version and, with default
// values, names the image a release of that version pushes.
func (c Chart) Check(version string) error {
	chartYAML := filepath.Join(c.Dir, "Chart.yaml")
	if c.Version != version {
		return fmt.Errorf("version mismatch: %s version is %q, VERSION is %q", chartYAML, c.Version, version)
	}
	if c.AppVersion != version {
		return fmt.Errorf("version mismatch: %s appVersion is %q, VERSION is %q", chartYAML, c.AppVersion, version)
	}
	values := filepath.Join(c.Dir, "values.yaml")
	if c.Repository == "" {
		return fmt.Errorf("%s: image.repository is empty", values)
	}
	if c.Tag != "" {
		return fmt.Errorf("%s: image.tag is %q: leave it empty so the chart names the image of its appVersion", values, c.Tag)
	}
	return nil
}

// Image is the reference the chart's default values name: the repository
// at the chart's appVersion.
func (c Chart) Image() string {
	return c.Repository + ":" + c.AppVersion
}

// elfMachine is the ELF machine of each architecture the image is built for.
var elfMachine = map[string]elf.Machine{
	"amd64": elf.EM_X86_64,
	"arm64": elf.EM_AARCH64,
}

// checkBinary fails unless path is a static Linux executable for the
// platform and, where this machine can run it, reports version and
// revision. The image has no libc, so a dynamically linked binary would not
// start.
func checkBinary(ctx context.Context, path string, p v1.Platform, version, revision string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("binary for %s: %w", p.String(), err)
	}
	defer f.Close()
	want, ok := elfMachine[p.Architecture]
	if !ok || p.OS != "linux" {
		return fmt.Errorf("binary %s: platform %s is not one the image is built for (linux/amd64, linux/arm64)", path, p.String())
	}
	if f.Machine != want {
		return fmt.Errorf("binary %s is built for %s, not %s", path, f.Machine, p.String())
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("binary %s is dynamically linked: build it with CGO_ENABLED=0 (the image has no libc)", path)
		}
	}
	if runtime.GOOS != p.OS || runtime.GOARCH != p.Architecture {
		return nil
	}
	out, err := runVersion(ctx, path)
	if err != nil {
		return err
	}
	got, err := ParseVersionOutput(out)
	if err != nil {
		return fmt.Errorf("binary %s: %w", path, err)
	}
	if got.Version != version {
		return fmt.Errorf("version mismatch: binary %s reports version %q, VERSION is %q (build it with `make image`)", path, got.Version, version)
	}
	if revision != "" && got.Revision != revision {
		return fmt.Errorf("binary %s reports revision %q, the release is of %q (rebuild it)", path, got.Revision, revision)
	}
	return nil
}

// runVersion runs `kneewatch version` with an empty environment, as the
// image would.
func runVersion(ctx context.Context, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "version")
	cmd.Env = []string{}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s version: %w: %s", path, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// BuildInfo is the first line of `kneewatch version`.
type BuildInfo struct {
	Version, Branch, Revision string
}

var versionLine = regexp.MustCompile(`^kneewatch, version (\S+) \(branch: (.*), revision: (\S*)\)`)

// ParseVersionOutput reads the version and revision `kneewatch version`
// prints (prometheus/common's version.Print).
func ParseVersionOutput(out []byte) (BuildInfo, error) {
	m := versionLine.FindSubmatch(out)
	if m == nil {
		first, _, _ := strings.Cut(string(out), "\n")
		return BuildInfo{}, fmt.Errorf("`kneewatch version` printed %q, not \"kneewatch, version X (branch: B, revision: R)\"", first)
	}
	return BuildInfo{Version: string(m[1]), Branch: string(m[2]), Revision: string(m[3])}, nil
}
