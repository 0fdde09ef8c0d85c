package release

import (
	"archive/tar"
	"debug/buildinfo"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/module"
)

// ThirdPartyDir holds, per module linked into the binaries, that module's
// license and notice files: the MIT, BSD and Apache licenses of the
// libraries kneewatch links ask for their texts to travel with a binary.
const ThirdPartyDir = LicenseDir + "/third_party"

// licenseFileName matches the files a module's root carries its license
// and notices in (LICENSE, LICENSE.txt, LICENCE, COPYING, NOTICE, …).
var licenseFileName = regexp.MustCompile(`(?i)^(licen[cs]e|copying|notice)([-._].*)?$`)

// Module is one module linked into a binary, as its build info names it
// (the replacement, when the module was replaced).
type Module struct{ Path, Version string }

// LinkedModules are the modules the binaries' build info lists, each once,
// sorted by path.
func LinkedModules(binaries []Binary) ([]Module, error) {
	seen := map[Module]bool{}
	for _, b := range binaries {
		info, err := buildinfo.ReadFile(b.Path)
		if err != nil {
			return nil, fmt.Errorf("binary %s: reading its build info for the third-party licenses: %w", b.Path, err)
		}
		for _, d := range info.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			seen[Module{d.Path, d.Version}] = true
		}
	}
	mods := make([]Module, 0, len(seen))
	for m := range seen {
		mods = append(mods, m)
	}
	slices.SortFunc(mods, func(a, b Module) int { return strings.Compare(a.Path+"@"+a.Version, b.Path+"@"+b.Version) })
	for i := 1; i < len(mods); i++ {
		if mods[i].Path == mods[i-1].Path {
			// Their license files would land on one path in the image.
			return nil, fmt.Errorf("module %s is linked at two versions (%s and %s) across the binaries; build them from one go.mod",
				mods[i].Path, mods[i-1].Version, mods[i].Version)
		}
	}
	return mods, nil
}

// thirdPartyEntries are the license files of every module linked into the
// binaries (moduleLicenseEntries).
func thirdPartyEntries(binaries []Binary, moduleCache string) ([]entry, error) {
	mods, err := LinkedModules(binaries)
	if err != nil {
		return nil, err
	}
	return moduleLicenseEntries(mods, moduleCache)
}

// moduleLicenseEntries are the license files of mods, read from the module
// cache (where `go build` put them) and placed under
// ThirdPartyDir/<module path>/. A module with none is an error naming it: a
// release does not ship a library without its license.
func moduleLicenseEntries(mods []Module, moduleCache string) ([]entry, error) {
	dirs := map[string]bool{}
	var files []entry
	for _, m := range mods {
		if m.Version == "" || strings.HasPrefix(m.Path, ".") || strings.HasPrefix(m.Path, "/") {
			return nil, fmt.Errorf("module %s: a local replacement has no license in the module cache; vendor its license or drop the replace", m.Path)
		}
		escPath, err := module.EscapePath(m.Path)
		if err != nil {
			return nil, fmt.Errorf("module %s: %w", m.Path, err)
		}
		escVersion, err := module.EscapeVersion(m.Version)
		if err != nil {
			return nil, fmt.Errorf("module %s@%s: %w", m.Path, m.Version, err)
		}
		root := filepath.Join(moduleCache, filepath.FromSlash(escPath)+"@"+escVersion)
		names, err := os.ReadDir(root)
		if err != nil {
			return nil, fmt.Errorf("module %s@%s: %w (the module cache the binaries were built from; --module-cache)", m.Path, m.Version, err)
		}
		dest := ThirdPartyDir + "/" + m.Path
		found := 0
		for _, n := range names {
			if !n.Type().IsRegular() || !licenseFileName.MatchString(n.Name()) {
				continue
			}
			data, err := os.ReadFile(filepath.Join(root, n.Name()))
			if err != nil {
				return nil, fmt.Errorf("module %s@%s: %w", m.Path, m.Version, err)
			}
			files = append(files, file(dest+"/"+n.Name(), 0o644, data))
			found++
		}
		if found == 0 {
			return nil, fmt.Errorf("module %s@%s has no license file (LICENSE, COPYING or NOTICE) in %s", m.Path, m.Version, root)
		}
		for d := dest; d != LicenseDir; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var entries []entry
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		entries = append(entries, dir(d, 0o755))
	}
	return append(entries, files...), nil
}

// WriteThirdPartyLicenses writes the license files of every module linked
// into the binaries under outDir, laid out as under ThirdPartyDir, for an
// image built another way (the Dockerfile) to copy in. It returns how many
// files it wrote.
func WriteThirdPartyLicenses(binaries []Binary, moduleCache, outDir string) (int, error) {
	entries, err := thirdPartyEntries(binaries, moduleCache)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		rel := strings.TrimPrefix(strings.TrimPrefix(e.name, ThirdPartyDir), "/")
		target := filepath.Join(outDir, filepath.FromSlash(rel))
		if e.typ == tar.TypeDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return n, err
			}
			continue
		}
		if err := os.WriteFile(target, e.data, 0o644); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
