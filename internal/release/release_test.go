package release

import (
	"archive/tar"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

var (
	amd64 = v1.Platform{OS: "linux", Architecture: "amd64"}
	arm64 = v1.Platform{OS: "linux", Architecture: "arm64"}
)

const (
	testVersion  = "0.1.0"
	testRevision = "0123456789abcdef0123456789abcdef01234567"
)

// fakeKneewatch is a static program that answers `version` as kneewatch
// does, so the builder's checks run on a real ELF binary without building
// kneewatch itself.
const fakeKneewatch = `package main

import (
	"fmt"
	"os"
)

var version, revision string

func main() {
	if len(os.Args) == 2 && os.Args[1] == "version" {
		fmt.Printf("kneewatch, version %s (branch: test, revision: %s)\n  go version: test\n", version, revision)
		return
	}
	os.Exit(2)
}
`

var (
	fakeMu    sync.Mutex
	fakeCache = map[string]string{}
	fakeDir   string
)

// fakeBinary builds (once per arguments) the fake kneewatch for a platform.
func fakeBinary(t *testing.T, p v1.Platform, version, revision string) string {
	t.Helper()
	fakeMu.Lock()
	defer fakeMu.Unlock()
	key := strings.Join([]string{p.Architecture, version, revision}, "|")
	if path, ok := fakeCache[key]; ok {
		return path
	}
	if fakeDir == "" {
		dir, err := os.MkdirTemp("", "kneewatch-release-test")
		if err != nil {
			t.Fatal(err)
		}
		fakeDir = dir
		for name, text := range map[string]string{"go.mod": "module fake\n\ngo 1.26\n", "main.go": fakeKneewatch} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := filepath.Join(fakeDir, fmt.Sprintf("kneewatch-%d", len(fakeCache)))
	cmd := exec.Command("go", "build", "-trimpath", "-o", out,
		"-ldflags", "-s -w -X main.version="+version+" -X main.revision="+revision, ".")
	cmd.Dir = fakeDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture, "GOFLAGS=", "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the fake kneewatch for %s: %v\n%s", p.String(), err, msg)
	}
	fakeCache[key] = out
	return out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fakeDir != "" {
		os.RemoveAll(fakeDir)
	}
	os.Exit(code)
}

// fixture is a set of valid inputs in a temporary directory.
type fixture struct {
	dir  string
	opts Options
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the fixture runs the amd64 fake binary")
	}
	dir := t.TempDir()
	f := &fixture{dir: dir}
	chart := filepath.Join(dir, "chart")
	writeFile(t, filepath.Join(chart, "Chart.yaml"), "apiVersion: v2\nname: kneewatch\nversion: 0.1.0\nappVersion: \"0.1.0\"\n")
	writeFile(t, filepath.Join(chart, "values.yaml"), "image:\n  repository: registry.example/kneewatch/kneewatch\n  tag: \"\"\n")
	writeFile(t, filepath.Join(dir, "ca.crt"), string(testCertificate(t)))
	zone := filepath.Join(dir, "zoneinfo")
	// Only the TZif magic matters to the builder; "TZif2" is a version-2 header.
	writeFile(t, filepath.Join(zone, "UTC"), "TZif2 utc")
	writeFile(t, filepath.Join(zone, "Europe", "Paris"), "TZif2 paris")
	symlink(t, "../UTC", filepath.Join(zone, "Etc", "UTC"))
	symlink(t, "/etc/localtime", filepath.Join(zone, "localtime"))
	symlink(t, "../../outside", filepath.Join(zone, "Etc", "Escape"))
	c, err := ReadChart(chart)
	if err != nil {
		t.Fatal(err)
	}
	license, err := ReadLicense(filepath.Join(moduleRoot(), "LICENSE"), filepath.Join(moduleRoot(), "NOTICE"))
	if err != nil {
		t.Fatal(err)
	}
	f.opts = Options{
		License:  license,
		Version:  testVersion,
		Revision: testRevision,
		Created:  time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
		Chart:    c,
		Base:     BaseFiles{CACerts: filepath.Join(dir, "ca.crt"), Zoneinfo: zone},
		Binaries: []Binary{
			{Platform: amd64, Path: fakeBinary(t, amd64, testVersion, testRevision)},
			{Platform: arm64, Path: fakeBinary(t, arm64, testVersion, testRevision)},
		},
	}
	return f
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// testCertificate is a self-signed CA certificate in PEM.
func testCertificate(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kneewatch test CA"},
		NotBefore:             time.Unix(0, 0),
		NotAfter:              time.Unix(0, 0).Add(100 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestBuildMakesAnIndexOfBothPlatformsRunningServeAsNonroot(t *testing.T) {
	f := newFixture(t)
	idx, err := Build(context.Background(), f.opts)
	if err != nil {
		t.Fatal(err)
	}
	platforms, err := Platforms(idx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range platforms {
		got = append(got, p.Platform.String())
		cfg, err := p.Image.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != p.Platform.Architecture || cfg.OS != "linux" {
			t.Errorf("%s: config is for %s/%s", p.Platform.String(), cfg.OS, cfg.Architecture)
		}
		want := v1.Config{
			User:         "65532:65532",
			Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
			Entrypoint:   []string{"/usr/local/bin/kneewatch"},
			Cmd:          []string{"serve", "--config.file=/etc/kneewatch/kneewatch.yml"},
			WorkingDir:   "/home/nonroot",
			ExposedPorts: map[string]struct{}{"9847/tcp": {}},
			Labels: map[string]string{
				"org.opencontainers.image.source":   "https://github.com/kneewatch/kneewatch",
				"org.opencontainers.image.revision": testRevision,
				"org.opencontainers.image.version":  testVersion,
				"org.opencontainers.image.licenses": "Apache-2.0",
				"org.opencontainers.image.title":    "kneewatch",
			},
		}
		if diff := cmp.Diff(want, cfg.Config); diff != "" {
			t.Errorf("%s: config (-want +got):\n%s", p.Platform.String(), diff)
		}
		if !cfg.Created.Time.Equal(f.opts.Created) {
			t.Errorf("%s: created %s, want %s", p.Platform.String(), cfg.Created.Time, f.opts.Created)
		}
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, got); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != "application/vnd.oci.image.index.v1+json" || m.Annotations[LabelVersion] != testVersion || m.Annotations[LabelRevision] != testRevision {
		t.Errorf("index is %s with annotations %v, want an OCI index annotated with version and revision", m.MediaType, m.Annotations)
	}
}

// tarEntry is what a test reads of one file in an image's filesystem.
type tarEntry struct {
	Mode     int64
	UID, GID int
	Link     string
	Data     string
}

func flatten(t *testing.T, img v1.Image) map[string]tarEntry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]tarEntry{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		e := tarEntry{Mode: h.Mode, UID: h.Uid, GID: h.Gid, Link: h.Linkname}
		if h.Typeflag == tar.TypeReg && !strings.HasPrefix(h.Name, "usr/local/bin/") && !strings.HasSuffix(h.Name, ".crt") {
			e.Data = string(data)
		}
		out["/"+strings.TrimSuffix(h.Name, "/")] = e
	}
}

func TestImageFilesystemHoldsTheBaseFilesAndTheBinary(t *testing.T) {
	f := newFixture(t)
	idx, err := Build(context.Background(), f.opts)
	if err != nil {
		t.Fatal(err)
	}
	platforms, err := Platforms(idx)
	if err != nil {
		t.Fatal(err)
	}
	got := flatten(t, platforms[0].Image)
	var names []string
	for name := range got {
		names = append(names, name)
	}
	sort.Strings(names)
	// localtime (absolute target) and Etc/Escape (leaves the database)
	// would dangle in the image, so they are left out.
	want := []string{
		"/etc", "/etc/group", "/etc/passwd", "/etc/ssl", "/etc/ssl/certs", "/etc/ssl/certs/ca-certificates.crt",
		"/home", "/home/nonroot", "/root", "/tmp",
		"/usr", "/usr/local", "/usr/local/bin", "/usr/local/bin/kneewatch",
		"/usr/share", "/usr/share/doc", "/usr/share/doc/kneewatch", "/usr/share/doc/kneewatch/LICENSE", "/usr/share/doc/kneewatch/NOTICE",
		"/usr/share/zoneinfo", "/usr/share/zoneinfo/Etc", "/usr/share/zoneinfo/Etc/UTC",
		"/usr/share/zoneinfo/Europe", "/usr/share/zoneinfo/Europe/Paris", "/usr/share/zoneinfo/UTC",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("files (-want +got):\n%s", diff)
	}
	checks := map[string]tarEntry{
		"/usr/local/bin/kneewatch":           {Mode: 0o755},
		"/home/nonroot":                      {Mode: 0o700, UID: 65532, GID: 65532},
		"/tmp":                               {Mode: 0o1777},
		"/etc/ssl/certs/ca-certificates.crt": {Mode: 0o644},
		"/usr/share/zoneinfo/Etc/UTC":        {Mode: 0o777, Link: "../UTC"},
		"/usr/share/zoneinfo/UTC":            {Mode: 0o644, Data: "TZif2 utc"},
		"/etc/group":                         {Mode: 0o644, Data: "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"},
		"/usr/share/doc/kneewatch/LICENSE":   {Mode: 0o644, Data: string(f.opts.License.Text)},
		"/usr/share/doc/kneewatch/NOTICE":    {Mode: 0o644, Data: string(f.opts.License.Notice)},
	}
	for name, want := range checks {
		if diff := cmp.Diff(want, got[name]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	if !strings.Contains(got["/etc/passwd"].Data, "\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n") {
		t.Errorf("/etc/passwd has no nonroot entry for 65532:\n%s", got["/etc/passwd"].Data)
	}
}

func TestTheSameInputsBuildTheSameDigests(t *testing.T) {
	f := newFixture(t)
	digest := func() v1.Hash {
		idx, err := Build(context.Background(), f.opts)
		if err != nil {
			t.Fatal(err)
		}
		h, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	first, second := digest(), digest()
	if first != second {
		t.Errorf("two builds of the same inputs: %s, then %s", first, second)
	}
	f.opts.Created = f.opts.Created.Add(time.Second)
	if third := digest(); third == first {
		t.Errorf("a build at another time has the same digest %s: the time stamp is not in the image", third)
	}
}

func TestBadInputFailsWithAClearError(t *testing.T) {
	f := newFixture(t)
	dir := f.dir
	notPEM := filepath.Join(dir, "not-pem.crt")
	writeFile(t, notPEM, "not a certificate\n")
	notTZif := filepath.Join(dir, "not-tzif")
	writeFile(t, filepath.Join(notTZif, "UTC"), "UTC\n")
	arm := fakeBinary(t, arm64, testVersion, testRevision)
	old := fakeBinary(t, amd64, "0.0.9", testRevision)
	otherRev := fakeBinary(t, amd64, testVersion, "fedcba")
	for _, tc := range []struct {
		name   string
		change func(o *Options)
		want   string
	}{
		{
			name:   "a missing CA bundle names the file and the package that provides it",
			change: func(o *Options) { o.Base.CACerts = filepath.Join(dir, "missing.crt") },
			want:   "base file: CA certificates: open " + filepath.Join(dir, "missing.crt") + ": no such file or directory (Debian's ca-certificates package provides /etc/ssl/certs/ca-certificates.crt)",
		},
		{
			name:   "a CA bundle without certificates is refused",
			change: func(o *Options) { o.Base.CACerts = notPEM },
			want:   "base file: CA certificates " + notPEM + " holds no PEM certificate",
		},
		{
			name:   "a missing time zone database names the package that provides it",
			change: func(o *Options) { o.Base.Zoneinfo = filepath.Join(dir, "nozones") },
			want:   "base file: time zone database: open " + filepath.Join(dir, "nozones", "UTC") + ": no such file or directory (Debian's tzdata package provides /usr/share/zoneinfo)",
		},
		{
			name:   "a time zone database whose UTC is not TZif is refused",
			change: func(o *Options) { o.Base.Zoneinfo = notTZif },
			want:   "base file: time zone database: " + filepath.Join(notTZif, "UTC") + " is not a TZif file",
		},
		{
			name:   "a chart appVersion other than VERSION is a version mismatch",
			change: func(o *Options) { o.Chart.AppVersion = "0.2.0" },
			want:   `version mismatch: ` + filepath.Join(dir, "chart", "Chart.yaml") + ` appVersion is "0.2.0", VERSION is "0.1.0"`,
		},
		{
			name:   "a chart version other than VERSION is a version mismatch",
			change: func(o *Options) { o.Chart.Version = "0.1.1" },
			want:   `version mismatch: ` + filepath.Join(dir, "chart", "Chart.yaml") + ` version is "0.1.1", VERSION is "0.1.0"`,
		},
		{
			name:   "a chart pinning image.tag would not name this release's image",
			change: func(o *Options) { o.Chart.Tag = "latest" },
			want:   filepath.Join(dir, "chart", "values.yaml") + `: image.tag is "latest": leave it empty so the chart names the image of its appVersion`,
		},
		{
			name:   "a binary of another version is a version mismatch",
			change: func(o *Options) { o.Binaries[0].Path = old },
			want:   `version mismatch: binary ` + old + ` reports version "0.0.9", VERSION is "0.1.0" (build it with ` + "`make image`)",
		},
		{
			name:   "a binary of another commit is refused",
			change: func(o *Options) { o.Binaries[0].Path = otherRev },
			want:   `binary ` + otherRev + ` reports revision "fedcba", the release is of "` + testRevision + `" (rebuild it)`,
		},
		{
			name:   "an arm64 binary given as amd64 is refused",
			change: func(o *Options) { o.Binaries[0].Path = arm },
			want:   "binary " + arm + " is built for EM_AARCH64, not linux/amd64",
		},
		{
			name:   "a missing binary names its platform",
			change: func(o *Options) { o.Binaries[1].Path = filepath.Join(dir, "nothing") },
			want:   "binary for linux/arm64: open " + filepath.Join(dir, "nothing") + ": no such file or directory",
		},
		{
			name:   "a release without a license is refused",
			change: func(o *Options) { o.License = License{} },
			want:   "no license: read the repository's LICENSE (kneewatch-release image --license-file LICENSE)",
		},
		{
			name:   "two binaries for one platform are refused",
			change: func(o *Options) { o.Binaries[1].Platform = amd64 },
			want:   "two binaries for linux/amd64",
		},
		{
			name:   "a platform the image is not built for is refused",
			change: func(o *Options) { o.Binaries[1].Platform = v1.Platform{OS: "linux", Architecture: "s390x"} },
			want:   "binary " + arm + ": platform linux/s390x is not one the image is built for (linux/amd64, linux/arm64)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := f.opts
			o.Binaries = append([]Binary(nil), f.opts.Binaries...)
			tc.change(&o)
			_, err := Build(context.Background(), o)
			if err == nil {
				t.Fatalf("Build succeeded, want error %q", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tc.want)
			}
		})
	}
}

func TestADynamicallyLinkedBinaryIsRefused(t *testing.T) {
	f := newFixture(t)
	// Debian's coreutils are dynamically linked against glibc.
	dynamic, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no `true` binary")
	}
	dynamic, err = filepath.EvalSymlinks(dynamic)
	if err != nil {
		t.Fatal(err)
	}
	f.opts.Binaries = f.opts.Binaries[:1]
	f.opts.Binaries[0].Path = dynamic
	_, err = Build(context.Background(), f.opts)
	want := "binary " + dynamic + " is dynamically linked: build it with CGO_ENABLED=0 (the image has no libc)"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

func TestReadLicenseNamesTheLicenseOrRefusesTheFile(t *testing.T) {
	root := moduleRoot()
	l, err := ReadLicense(filepath.Join(root, "LICENSE"), filepath.Join(root, "NOTICE"))
	if err != nil {
		t.Fatal(err)
	}
	if l.SPDX != "Apache-2.0" || !strings.Contains(string(l.Notice), "Copyright 2026 The kneewatch Authors") {
		t.Errorf("the repository's LICENSE reads as %q with notice %q, want Apache-2.0 and the kneewatch Authors' copyright", l.SPDX, l.Notice)
	}
	dir := t.TempDir()
	mit := filepath.Join(dir, "MIT")
	writeFile(t, mit, "MIT License\n\nCopyright (c) 2026\n\nPermission is hereby granted, free of charge, ...\n")
	reflowed := filepath.Join(dir, "reflowed")
	writeFile(t, reflowed, strings.Join(strings.Fields(string(l.Text)), "\n"))
	for _, tc := range []struct{ name, license, notice, want string }{
		{"the Apache License with its lines reflowed is still Apache-2.0", reflowed, "", ""},
		{"a missing LICENSE names the file", filepath.Join(dir, "LICENSE"), "",
			"license file: open " + filepath.Join(dir, "LICENSE") + ": no such file or directory (the repository's LICENSE, whose license labels the image)"},
		{"a license the release does not know is refused, not guessed", mit, "",
			"license file " + mit + ": not the text of a license the release knows (Apache-2.0), so the image's org.opencontainers.image.licenses label cannot name it"},
		{"a missing NOTICE names the file", reflowed, filepath.Join(dir, "NOTICE"),
			"notice file: open " + filepath.Join(dir, "NOTICE") + ": no such file or directory (the repository's NOTICE, shipped beside LICENSE)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadLicense(tc.license, tc.notice)
			switch {
			case tc.want == "" && (err != nil || got.SPDX != "Apache-2.0"):
				t.Errorf("ReadLicense = %q, %v; want Apache-2.0", got.SPDX, err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("error\n got: %v\nwant: %s", err, tc.want)
			}
		})
	}
}

func TestReadVersionRefusesWhatIsNotAVersion(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, text, want string }{
		{"a plain version with a newline is read", "0.1.0\n", ""},
		{"a pre-release is read", "1.2.3-rc.1", ""},
		{"a leading v is refused: the tag adds it", "v0.1.0\n", `"v0.1.0" is not a version like 1.2.3`},
		{"two components are refused", "0.1", `"0.1" is not a version like 1.2.3`},
		{"an empty file is refused", "", `"" is not a version like 1.2.3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "VERSION")
			writeFile(t, path, tc.text)
			got, err := ReadVersion(path)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want == "" && got != strings.TrimSpace(tc.text):
				t.Errorf("read %q", got)
			case tc.want != "" && (err == nil || err.Error() != path+": "+tc.want):
				t.Errorf("error %v, want %s: %s", err, path, tc.want)
			}
		})
	}
}

func TestWriteLayoutReplacesOnlyALayout(t *testing.T) {
	f := newFixture(t)
	idx, err := Build(context.Background(), f.opts)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(f.dir, "image")
	ref := "registry.example/kneewatch/kneewatch:0.1.0"
	for range 2 {
		if err := WriteLayout(out, idx, ref); err != nil {
			t.Fatal(err)
		}
	}
	back, gotRef, err := ReadLayout(out)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := idx.Digest()
	if got, _ := back.Digest(); got != want || gotRef != ref {
		t.Errorf("read back %s named %q, wrote %s named %q", got, gotRef, want, ref)
	}
	other := filepath.Join(f.dir, "chart")
	err = WriteLayout(other, idx, ref)
	if wantErr := other + " is not empty and not an OCI layout: not replacing it"; err == nil || err.Error() != wantErr {
		t.Errorf("writing over the chart: %v, want %s", err, wantErr)
	}
	if _, _, err := ReadLayout(filepath.Join(f.dir, "nowhere")); err == nil || !strings.Contains(err.Error(), "is not an OCI layout (`make image` writes it)") {
		t.Errorf("reading a missing layout: %v", err)
	}
}

func TestParseVersionOutput(t *testing.T) {
	got, err := ParseVersionOutput([]byte("kneewatch, version 0.1.0 (branch: main, revision: abc123)\n  build user:       \n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (BuildInfo{Version: "0.1.0", Branch: "main", Revision: "abc123"}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := ParseVersionOutput([]byte("usage: kneewatch COMMAND\n")); err == nil || err.Error() != "`kneewatch version` printed \"usage: kneewatch COMMAND\", not \"kneewatch, version X (branch: B, revision: R)\"" {
		t.Errorf("error %v", err)
	}
}
