package release

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
)

// BasePackages are the Debian packages the base files come from by default
// (BaseFiles' usual paths): the build host's, not a pinned base image's. So
// the base layer, and the image digests, are the same on two hosts with the
// same versions of these packages installed, and differ otherwise.
var BasePackages = []string{CACertsPackage, ZoneinfoPackage}

// The Debian packages that provide CACertsPath and ZoneinfoPath.
const (
	CACertsPackage  = "ca-certificates"
	ZoneinfoPackage = "tzdata"
)

// DebianVersions returns the installed version of each named Debian
// package, as dpkg-query reports it. A package dpkg does not know, or a host
// without dpkg-query, is left out: the caller says the version is unknown.
func DebianVersions(ctx context.Context, pkgs ...string) map[string]string {
	args := append([]string{"-W", "-f=${Package}\t${Version}\t${db:Status-Abbrev}\n"}, pkgs...)
	// dpkg-query exits non-zero when one package is unknown but still
	// lists the others, so its output is read whatever the exit status.
	out, _ := exec.CommandContext(ctx, "dpkg-query", args...).Output()
	versions := map[string]string{}
	for line := range strings.SplitSeq(string(bytes.TrimSpace(out)), "\n") {
		name, rest, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		version, status, _ := strings.Cut(rest, "\t")
		// "ii": wanted and installed; a removed package keeps a version.
		if version != "" && strings.HasPrefix(status, "ii") {
			versions[name] = version
		}
	}
	return versions
}
