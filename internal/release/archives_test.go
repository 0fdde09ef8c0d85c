package release

import (
	"compress/gzip"
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestReleaseArchives checks the archives goreleaser made in dist/release
// (`make archives`, a snapshot of what the release workflow publishes):
// one per platform the release builds, each holding the binary built for
// that platform, LICENSE, NOTICE and README.md, and under third_party/ a
// license file of every module the binary's build info lists, as the
// image carries them.
func TestReleaseArchives(t *testing.T) {
	if testing.Short() {
		t.Skip("checks the output of `make archives`, which -short does not rebuild")
	}
	dir := filepath.Join(moduleRoot(), "dist", "release")
	for _, goos := range []string{"linux", "darwin"} {
		for _, goarch := range []string{"amd64", "arm64"} {
			t.Run(goos+"/"+goarch, func(t *testing.T) {
				archives, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("kneewatch_*_%s_%s.tar.gz", goos, goarch)))
				if len(archives) != 1 {
					required(t, fmt.Sprintf("want one %s/%s archive in %s, found %d (run `make archives`)", goos, goarch, dir, len(archives)))
				}
				out := t.TempDir()
				names := extractTarGz(t, archives[0], out)
				for _, want := range []string{"kneewatch", "LICENSE", "NOTICE", "README.md"} {
					if !names[want] {
						t.Errorf("%s has no %s", filepath.Base(archives[0]), want)
					}
				}
				bin := filepath.Join(out, "kneewatch")
				info, err := buildinfo.ReadFile(bin)
				if err != nil {
					t.Fatalf("the archive's binary: %v", err)
				}
				settings := map[string]string{}
				for _, s := range info.Settings {
					settings[s.Key] = s.Value
				}
				if settings["GOOS"] != goos || settings["GOARCH"] != goarch {
					t.Errorf("the %s/%s archive's binary is built for %s/%s", goos, goarch, settings["GOOS"], settings["GOARCH"])
				}
				checkModuleLicenses(t, filepath.Join(out, "third_party"), bin, filepath.Base(archives[0]))
			})
		}
	}
}

// extractTarGz writes a .tar.gz under dir (extractTar) and returns its
// regular files' names.
func extractTarGz(t *testing.T, path, dir string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return extractTar(t, gz, dir)
}
