package main

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kneewatch/kneewatch/internal/release"
)

func TestPushSendsTheLayoutToTheRegistry(t *testing.T) {
	// No credentials of the user's: the keychain reads an empty config.
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	var idx v1.ImageIndex = empty.Index
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}},
		})
	}
	dir := filepath.Join(t.TempDir(), "image")
	if err := release.WriteLayout(dir, idx, "registry.example/kneewatch/kneewatch:0.1.0"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	to := strings.TrimPrefix(srv.URL, "http://") + "/kneewatch/kneewatch:0.1.0"
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"push", "--layout", dir, "--to", to}, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	want, _ := idx.Digest()
	if !strings.HasPrefix(stdout.String(), "pushed "+to+"\n"+strings.TrimSuffix(to, ":0.1.0")+"@"+want.String()+"\n  linux/amd64\t") {
		t.Errorf("push printed:\n%s\nwant the reference and %s", stdout.String(), want)
	}
	ref, err := name.ParseReference(to)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := got.Digest(); d != want {
		t.Errorf("the registry holds %s, pushed %s", d, want)
	}
}

func TestUsageErrorsSayWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "want a command: image, push or licenses"},
		{"an unknown command", []string{"build"}, `unknown command "build": want image, push or licenses`},
		{"licenses without --out", []string{"licenses", "--binary", "linux/amd64=" + os.Args[0]}, "--out: name the directory"},
		{"licenses without a binary", []string{"licenses", "--out", dir}, "--binary: name at least one binary"},
		{"licenses from a module cache that is not there", []string{"licenses", "--binary", "linux/amd64=" + os.Args[0], "--out", dir, "--module-cache", filepath.Join(dir, "no-cache")},
			"module "},
		{"a --binary without a path", []string{"image", "--binary", "linux/amd64"}, `invalid value "linux/amd64" for flag -binary: "linux/amd64" is not OS/ARCH=PATH`},
		{"a missing VERSION file", []string{"image", "--version-file", filepath.Join(dir, "VERSION")}, "open " + filepath.Join(dir, "VERSION") + ": no such file or directory"},
		{"a missing LICENSE", []string{"image", "--version-file", "../../VERSION", "--chart", "../../deploy/helm/kneewatch", "--license-file", filepath.Join(dir, "LICENSE")},
			"license file: open " + filepath.Join(dir, "LICENSE") + ": no such file or directory (the repository's LICENSE, whose license labels the image)"},
		{"pushing without a layout", []string{"push", "--layout", dir}, dir + " is not an OCI layout (`make image` writes it): "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, io.Discard, io.Discard)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want %s", err, tc.want)
			}
		})
	}
}

// The licenses command reads a real binary's build info (this test's own)
// and the real module cache it was built from, and writes a license of
// every module the binary links.
func TestLicensesWritesALicenseOfEveryLinkedModule(t *testing.T) {
	out := t.TempDir()
	var stdout strings.Builder
	if err := run(context.Background(), []string{"licenses", "--binary", "linux/amd64=" + os.Args[0], "--out", out}, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	mods, err := release.LinkedModules([]release.Binary{{Path: os.Args[0]}})
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) < 5 {
		t.Fatalf("the test binary links %d modules; its build info should list go-containerregistry and more", len(mods))
	}
	for _, m := range mods {
		entries, err := os.ReadDir(filepath.Join(out, filepath.FromSlash(m.Path)))
		files := 0
		for _, e := range entries {
			if e.Type().IsRegular() {
				files++
			}
		}
		if err != nil || files == 0 {
			t.Errorf("no license written for %s@%s (%v)", m.Path, m.Version, err)
		}
	}
	t.Logf("%s (%d modules)", strings.TrimSpace(stdout.String()), len(mods))
}

func TestImageNamesTheBaseLayerAndTheHostPackagesItCameFrom(t *testing.T) {
	var idx v1.ImageIndex = empty.Index
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(256, 2)
		if err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}},
		})
	}
	platforms, err := release.Platforms(idx)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := platforms[0].Image.Layers()
	if err != nil {
		t.Fatal(err)
	}
	base, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	files := release.BaseFiles{CACerts: "/etc/ssl/certs/ca-certificates.crt", Zoneinfo: "/usr/share/zoneinfo"}
	if err := printBase(&out, idx, files, map[string]string{"ca-certificates": "20230311+deb12u1"}); err != nil {
		t.Fatal(err)
	}
	want := "  base layer\t" + base.String() + "\tCA certificates /etc/ssl/certs/ca-certificates.crt (ca-certificates 20230311+deb12u1), " +
		"time zone database /usr/share/zoneinfo (tzdata version unknown (not installed by dpkg on this host)), from this host\n"
	if out.String() != want {
		t.Errorf("printed\n%q\nwant\n%q", out.String(), want)
	}
}
