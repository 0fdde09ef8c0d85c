package release

import (
	"fmt"
	"os"
	"strings"
)

// LicenseDir is where the image carries the license and notice texts (the
// Apache License asks that recipients of the work get a copy of both).
const LicenseDir = "/usr/share/doc/kneewatch"

// License is what the image says and carries about its license: the SPDX
// identifier of the repository's LICENSE, which the
// org.opencontainers.image.licenses label reads, and the texts themselves.
type License struct {
	// SPDX is the license's SPDX identifier, e.g. Apache-2.0.
	SPDX string
	// Text is the LICENSE file; Notice the NOTICE file (may be empty).
	Text, Notice []byte
}

// knownLicenses are the license texts a release recognizes, by SPDX
// identifier: the text's opening and closing words, whitespace folded.
var knownLicenses = []struct {
	spdx, opening, closing string
}{
	{
		spdx:    "Apache-2.0",
		opening: "Apache License Version 2.0, January 2004 http://www.apache.org/licenses/ TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION",
		closing: "END OF TERMS AND CONDITIONS",
	},
}

// IdentifyLicense returns the SPDX identifier of a license text, or false
// when it is not one knownLicenses holds.
func IdentifyLicense(text []byte) (string, bool) {
	folded := strings.Join(strings.Fields(string(text)), " ")
	for _, l := range knownLicenses {
		if strings.HasPrefix(folded, l.opening) && strings.Contains(folded, l.closing) {
			return l.spdx, true
		}
	}
	return "", false
}

// ReadLicense reads the repository's LICENSE and, when noticePath is not
// empty, its NOTICE, and identifies the license. A missing file, or a text
// that is not a license the release knows, is an error naming the file.
func ReadLicense(licensePath, noticePath string) (License, error) {
	text, err := os.ReadFile(licensePath)
	if err != nil {
		return License{}, fmt.Errorf("license file: %w (the repository's LICENSE, whose license labels the image)", err)
	}
	spdx, ok := IdentifyLicense(text)
	if !ok {
		var known []string
		for _, l := range knownLicenses {
			known = append(known, l.spdx)
		}
		return License{}, fmt.Errorf("license file %s: not the text of a license the release knows (%s), so the image's %s label cannot name it",
			licensePath, strings.Join(known, ", "), LabelLicenses)
	}
	l := License{SPDX: spdx, Text: text}
	if noticePath != "" {
		if l.Notice, err = os.ReadFile(noticePath); err != nil {
			return License{}, fmt.Errorf("notice file: %w (the repository's NOTICE, shipped beside LICENSE)", err)
		}
	}
	return l, nil
}

// licenseEntries are the license files of the image.
func licenseEntries(l License) ([]entry, error) {
	if l.SPDX == "" || len(l.Text) == 0 {
		return nil, fmt.Errorf("no license: read the repository's LICENSE (kneewatch-release image --license-file LICENSE)")
	}
	entries := []entry{dir("/usr/share/doc", 0o755), dir(LicenseDir, 0o755), file(LicenseDir+"/LICENSE", 0o644, l.Text)}
	if len(l.Notice) > 0 {
		entries = append(entries, file(LicenseDir+"/NOTICE", 0o644, l.Notice))
	}
	return entries, nil
}
