package release

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A module's license files are found in its root in the module cache,
// under the cache's escaped path (an upper-case letter is "!" and the
// letter), and land under the module's own path in the image; other files
// stay out.
func TestModuleLicensesAreCopiedUnderTheirModulePath(t *testing.T) {
	cache := t.TempDir()
	writeFile(t, filepath.Join(cache, "github.com", "!kim!machine!gun", "automemlimit@v1.0.2", "LICENSE"), "MIT License text")
	writeFile(t, filepath.Join(cache, "github.com", "!kim!machine!gun", "automemlimit@v1.0.2", "memlimit", "memlimit.go"), "package memlimit")
	writeFile(t, filepath.Join(cache, "golang.org", "x", "mod@v0.41.0", "LICENSE"), "BSD text")
	writeFile(t, filepath.Join(cache, "golang.org", "x", "mod@v0.41.0", "PATENTS"), "patents")
	writeFile(t, filepath.Join(cache, "example.com", "lib@v1.0.0", "NOTICE.md"), "notice")
	writeFile(t, filepath.Join(cache, "example.com", "lib@v1.0.0", "COPYING"), "GPL-free text")
	writeFile(t, filepath.Join(cache, "example.com", "lib@v1.0.0", "README.md"), "readme")
	entries, err := moduleLicenseEntries([]Module{
		{"example.com/lib", "v1.0.0"}, {"github.com/KimMachineGun/automemlimit", "v1.0.2"}, {"golang.org/x/mod", "v0.41.0"},
	}, cache)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		got[e.name] = string(e.data)
	}
	d := ThirdPartyDir
	want := map[string]string{
		d: "", d + "/example.com": "", d + "/example.com/lib": "",
		d + "/github.com": "", d + "/github.com/KimMachineGun": "", d + "/github.com/KimMachineGun/automemlimit": "",
		d + "/golang.org": "", d + "/golang.org/x": "", d + "/golang.org/x/mod": "",
		d + "/example.com/lib/COPYING":                       "GPL-free text",
		d + "/example.com/lib/NOTICE.md":                     "notice",
		d + "/github.com/KimMachineGun/automemlimit/LICENSE": "MIT License text",
		d + "/golang.org/x/mod/LICENSE":                      "BSD text",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

func TestAModuleWithoutItsLicenseFailsTheRelease(t *testing.T) {
	cache := t.TempDir()
	writeFile(t, filepath.Join(cache, "example.com", "bare@v0.1.0", "bare.go"), "package bare")
	for _, tc := range []struct {
		mod  Module
		want string
	}{
		{Module{"example.com/bare", "v0.1.0"}, "module example.com/bare@v0.1.0 has no license file (LICENSE, COPYING or NOTICE) in " + filepath.Join(cache, "example.com", "bare@v0.1.0")},
		{Module{"example.com/gone", "v0.2.0"}, "module example.com/gone@v0.2.0: open " + filepath.Join(cache, "example.com", "gone@v0.2.0") + ": no such file or directory (the module cache the binaries were built from; --module-cache)"},
		{Module{"../local", ""}, "module ../local: a local replacement has no license in the module cache"},
	} {
		_, err := moduleLicenseEntries([]Module{tc.mod}, cache)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.mod, err, tc.want)
		}
	}
}
