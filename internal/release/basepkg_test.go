package release

import (
	"context"
	"os/exec"
	"testing"
)

func TestDebianVersionsNamesInstalledPackagesOnly(t *testing.T) {
	if _, err := exec.LookPath("dpkg-query"); err != nil {
		t.Skip("no dpkg-query: not a Debian host")
	}
	got := DebianVersions(context.Background(), "kneewatch-no-such-package", "dpkg")
	if _, ok := got["kneewatch-no-such-package"]; ok {
		t.Errorf("an unknown package has a version: %v", got)
	}
	// dpkg itself is installed wherever dpkg-query is.
	if got["dpkg"] == "" {
		t.Errorf("no version for dpkg: %v", got)
	}
	t.Logf("versions: %v; the base packages here: %v", got, DebianVersions(context.Background(), BasePackages...))
}
