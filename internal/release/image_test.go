package release

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// moduleRoot is the kneewatch module's root, two directories up.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// required fails the test under `make test` (which builds what is
// missing, so a miss there is a bug) and skips it in a plain `go test`.
func required(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("KNEEWATCH_REQUIRE_TOOLS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// TestReleasedImage checks the image `make image` wrote to dist/image as a
// user meets it: pushed to a registry and pulled back, its config read as
// a container runtime reads it, its amd64 filesystem extracted and the
// binary run from it, and the chart's default render naming it.
func TestReleasedImage(t *testing.T) {
	if testing.Short() {
		t.Skip("checks the build output of `make image`, which -short does not rebuild")
	}
	root := moduleRoot()
	dir := filepath.Join(root, "dist", "image")
	if _, err := os.Stat(filepath.Join(dir, "index.json")); err != nil {
		required(t, "no image in "+dir+" (run `make image`)")
	}
	local, ref, err := ReadLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	version, err := ReadVersion(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	chart, err := ReadChart(filepath.Join(root, "deploy", "helm", "kneewatch"))
	if err != nil {
		t.Fatal(err)
	}
	if ref != chart.Image() || ref != chart.Repository+":"+version {
		t.Fatalf("dist/image is named %s; the chart names %s and VERSION is %s (run `make image`)", ref, chart.Image(), version)
	}
	localDigest, err := local.Digest()
	if err != nil {
		t.Fatal(err)
	}

	// Push to go-containerregistry's registry on loopback and pull back.
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	pushRef := host + "/" + tag.RepositoryStr() + ":" + tag.TagStr()
	ctx := context.Background()
	pushed, err := Push(ctx, local, pushRef)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pushed %s as %s", ref, pushed)
	pullRef, err := name.ParseReference(pushRef)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Index(pullRef, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("pulling %s: %v", pushRef, err)
	}
	pulledDigest, err := pulled.Digest()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pulled %s: index %s", pushRef, pulledDigest)
	if pulledDigest != localDigest || pushed.DigestStr() != localDigest.String() {
		t.Fatalf("pulled index %s, pushed %s, the layout holds %s", pulledDigest, pushed.DigestStr(), localDigest)
	}

	platforms, err := Platforms(pulled)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range platforms {
		names = append(names, p.Platform.String())
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, names); diff != "" {
		t.Fatalf("platforms (-want +got):\n%s", diff)
	}

	deploy := renderDeployment(t, root)
	c := deploy.Spec.Template.Spec.Containers[0]
	mounted := mountedConfig(t, deploy)
	t.Logf("helm template (default values) names image %s; config mounted at %s; port %d; runAsUser %d",
		c.Image, mounted, c.Ports[0].ContainerPort, deploy.Spec.Template.Spec.SecurityContext.RunAsUser)
	if c.Image != ref {
		t.Errorf("the chart's default render names image %s, the release produced %s", c.Image, ref)
	}

	var revision string
	for _, p := range platforms {
		cfg, err := p.Image.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		pretty, _ := json.MarshalIndent(cfg.Config, "  ", "  ")
		t.Logf("%s: manifest %s, %d bytes to pull; config:\n  %s", p.Platform.String(), p.Digest, p.Size, pretty)
		checkConfig(t, p.Platform, cfg, version, deploy, mounted)
		revision = cfg.Config.Labels[LabelRevision]
	}
	if out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output(); err == nil {
		if head := strings.TrimSpace(string(out)); head != revision {
			t.Errorf("the image is of commit %s, the checkout is at %s (run `make image`)", revision, head)
		}
	}

	// Run kneewatch from the amd64 image's filesystem, as the container would.
	amd := platforms[0].Image
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("this machine cannot run the linux/amd64 binary")
	}
	fsDir := t.TempDir()
	extract(t, amd, fsDir)
	checkBaseFiles(t, fsDir)
	for _, name := range []string{"LICENSE", "NOTICE"} {
		want, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(filepath.Join(fsDir, filepath.FromSlash(LicenseDir), name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("the image's %s/%s is not the repository's %s (%v)", LicenseDir, name, name, err)
		}
	}
	bin := filepath.Join(fsDir, BinaryPath)
	checkThirdPartyLicenses(t, fsDir, bin)
	cmd := exec.Command(bin, "version")
	cmd.Env = []string{}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", BinaryPath, err, out)
	}
	t.Logf("kneewatch version, run from the extracted linux/amd64 image:\n%s", out)
	info, err := ParseVersionOutput(out)
	if err != nil {
		t.Fatal(err)
	}
	if info.Version != chart.AppVersion || info.Revision != revision {
		t.Errorf("the image's binary is version %s of %s; the chart's appVersion is %s, the label's revision %s",
			info.Version, info.Revision, chart.AppVersion, revision)
	}
}

// checkConfig compares one platform's config with the chart's expectations.
func checkConfig(t *testing.T, p v1.Platform, cfg *v1.ConfigFile, version string, deploy deployment, mounted string) {
	t.Helper()
	pod := deploy.Spec.Template.Spec
	c := pod.Containers[0]
	if cfg.OS != p.OS || cfg.Architecture != p.Architecture {
		t.Errorf("%s: config is for %s/%s", p.String(), cfg.OS, cfg.Architecture)
	}
	if want := strconv.Itoa(pod.SecurityContext.RunAsUser) + ":" + strconv.Itoa(pod.SecurityContext.RunAsGroup); cfg.Config.User != want || want != "65532:65532" {
		t.Errorf("%s: user %q, the chart runs as %s", p.String(), cfg.Config.User, want)
	}
	if diff := cmp.Diff([]string{BinaryPath}, cfg.Config.Entrypoint); diff != "" {
		t.Errorf("%s: entrypoint (-want +got):\n%s", p.String(), diff)
	}
	if len(cfg.Config.Cmd) != 2 || cfg.Config.Cmd[0] != "serve" || cfg.Config.Cmd[1] != "--config.file="+mounted {
		t.Errorf("%s: default command %q, want serve --config.file=%s (where the chart mounts it)", p.String(), cfg.Config.Cmd, mounted)
	}
	if !contains(c.Args, "--config.file="+mounted) || c.Args[0] != cfg.Config.Cmd[0] {
		t.Errorf("the chart's args %q do not run %q with the mounted config", c.Args, cfg.Config.Cmd)
	}
	port := strconv.Itoa(c.Ports[0].ContainerPort) + "/tcp"
	if _, ok := cfg.Config.ExposedPorts[port]; !ok || len(cfg.Config.ExposedPorts) != 1 {
		t.Errorf("%s: exposed ports %v, the chart's port is %s", p.String(), cfg.Config.ExposedPorts, port)
	}
	labels := cfg.Config.Labels
	license, err := ReadLicense(filepath.Join(moduleRoot(), "LICENSE"), "")
	if err != nil {
		t.Fatal(err)
	}
	if license.SPDX != "Apache-2.0" {
		t.Errorf("the repository's LICENSE reads as %q, want Apache-2.0", license.SPDX)
	}
	for key, want := range map[string]string{LabelSource: Source, LabelVersion: version, LabelLicenses: license.SPDX} {
		if labels[key] != want {
			t.Errorf("%s: label %s is %q, want %q", p.String(), key, labels[key], want)
		}
	}
	if len(labels[LabelRevision]) != 40 {
		t.Errorf("%s: label %s is %q, not a commit", p.String(), LabelRevision, labels[LabelRevision])
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// deployment is what the test reads of the chart's Deployment.
type deployment struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Template struct {
			Spec struct {
				SecurityContext struct {
					RunAsUser  int `yaml:"runAsUser"`
					RunAsGroup int `yaml:"runAsGroup"`
				} `yaml:"securityContext"`
				Containers []struct {
					Image string   `yaml:"image"`
					Args  []string `yaml:"args"`
					Ports []struct {
						ContainerPort int `yaml:"containerPort"`
					} `yaml:"ports"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
				Volumes []struct {
					Name      string `yaml:"name"`
					ConfigMap struct {
						Items []struct {
							Key  string `yaml:"key"`
							Path string `yaml:"path"`
						} `yaml:"items"`
					} `yaml:"configMap"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// renderDeployment renders the chart with default values with the real
// helm and returns its Deployment.
func renderDeployment(t *testing.T, root string) deployment {
	t.Helper()
	helm := testtools.Path(t, "helm")
	home := t.TempDir()
	cmd := exec.Command(helm, "template", "kneewatch", filepath.Join(root, "deploy", "helm", "kneewatch"), "--namespace", "monitoring")
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var d deployment
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if d.Kind == "Deployment" {
			if len(d.Spec.Template.Spec.Containers) != 1 || len(d.Spec.Template.Spec.Containers[0].Ports) == 0 {
				t.Fatalf("the Deployment has no single container with a port")
			}
			return d
		}
	}
	t.Fatal("helm template rendered no Deployment")
	return deployment{}
}

// mountedConfig is the path at which the chart's container sees
// kneewatch.yml: the config volume's mount path and the item's path.
func mountedConfig(t *testing.T, d deployment) string {
	t.Helper()
	for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name != m.Name {
				continue
			}
			for _, item := range v.ConfigMap.Items {
				if item.Key == "kneewatch.yml" {
					return path.Join(m.MountPath, item.Path)
				}
			}
		}
	}
	t.Fatal("the chart mounts no kneewatch.yml")
	return ""
}

// extract writes an image's flattened filesystem under dir.
func extract(t *testing.T, img v1.Image, dir string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	extractTar(t, rc, dir)
}

// extractTar writes a tar stream's directories, symlinks and regular files
// under dir, and returns the regular files' names (cleaned, slash-separated,
// relative to dir). Any other entry type fails the test.
func extractTar(t *testing.T, r io.Reader, dir string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		name := path.Clean("/" + h.Name)
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeSymlink:
			if err = os.MkdirAll(filepath.Dir(target), 0o755); err == nil {
				err = os.Symlink(h.Linkname, target)
			}
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(target), 0o755); err == nil {
				var data []byte
				if data, err = io.ReadAll(tr); err == nil {
					err = os.WriteFile(target, data, os.FileMode(h.Mode).Perm())
				}
			}
			names[name[1:]] = true
		default:
			t.Fatalf("%s: unexpected tar entry type %q", h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkBaseFiles checks what the binary needs of the base: a name for its
// user, CA certificates to verify TLS with, and time zones.
func checkBaseFiles(t *testing.T, dir string) {
	t.Helper()
	passwd, err := os.ReadFile(filepath.Join(dir, "etc", "passwd"))
	if err != nil || !bytes.Contains(passwd, []byte("nonroot:x:65532:65532:")) {
		t.Errorf("/etc/passwd has no nonroot user 65532 (%v):\n%s", err, passwd)
	}
	certs, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(CACertsPath)))
	if err != nil || !x509.NewCertPool().AppendCertsFromPEM(certs) {
		t.Errorf("%s holds no certificates (%v)", CACertsPath, err)
	}
	zone, err := os.ReadFile(filepath.Join(dir, "usr", "share", "zoneinfo", "Europe", "Berlin"))
	if err == nil {
		_, err = time.LoadLocationFromTZData("Europe/Berlin", zone)
	}
	if err != nil {
		t.Errorf("the image's time zone database has no Europe/Berlin: %v", err)
	}
}

// checkThirdPartyLicenses reads the modules linked into the image's own
// binary and wants a license file of each under ThirdPartyDir.
func checkThirdPartyLicenses(t *testing.T, fsDir, bin string) {
	t.Helper()
	checkModuleLicenses(t, filepath.Join(fsDir, filepath.FromSlash(ThirdPartyDir)), bin, "the image")
}

// checkModuleLicenses reads the modules linked into bin and wants a
// license file of each under dir/<module path>; what names the carrier in
// errors.
func checkModuleLicenses(t *testing.T, dir, bin, what string) {
	t.Helper()
	mods, err := LinkedModules([]Binary{{Path: bin}})
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) == 0 {
		t.Fatalf("%s links no modules: its build info is gone", bin)
	}
	files := 0
	for _, m := range mods {
		entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(m.Path)))
		n := 0
		for _, e := range entries {
			if e.Type().IsRegular() && licenseFileName.MatchString(e.Name()) {
				n++
			}
		}
		if err != nil || n == 0 {
			t.Errorf("%s carries no license of %s@%s, which its binary links (%v)", what, m.Path, m.Version, err)
		}
		files += n
	}
	t.Logf("%s: third-party licenses, %d files for the %d modules the binary links", what, files, len(mods))
}
