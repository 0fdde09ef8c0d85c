package release

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The base of the image is a handful of files the build assembles itself,
// the files distroless/static provides to a static Go binary: CA
// certificates (TLS to upstreams and the API server), the time zone
// database, and passwd/group entries so UID 65532 has a name and a home.
// There is no shell, package manager or libc.

// UID and GID the image runs as: distroless's "nonroot", the chart's
// runAsUser and runAsGroup.
const (
	UID = 65532
	GID = 65532
)

const (
	// CACertsPath is where Go's crypto/x509 looks first on Linux (and
	// distroless puts the bundle), so no SSL_CERT_FILE is needed.
	CACertsPath = "/etc/ssl/certs/ca-certificates.crt"
	// ZoneinfoPath is where Go's time package looks for the time zone database.
	ZoneinfoPath = "/usr/share/zoneinfo"
	// HomeDir is the nonroot user's home and the image's working directory.
	HomeDir = "/home/nonroot"
)

// passwd and group name root, nobody and nonroot as distroless does.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nobody:x:65534:\n" +
		"nonroot:x:65532:\n"
)

// BaseFiles names the host files the base layer is assembled from.
type BaseFiles struct {
	// CACerts is a PEM bundle, e.g. /etc/ssl/certs/ca-certificates.crt
	// from Debian's ca-certificates package.
	CACerts string
	// Zoneinfo is a time zone database directory, e.g. /usr/share/zoneinfo
	// from Debian's tzdata package.
	Zoneinfo string
}

// entry is one file, directory or symlink of a layer.
type entry struct {
	name     string // absolute path in the image
	typ      byte   // tar.TypeReg, TypeDir or TypeSymlink
	mode     int64
	uid, gid int
	data     []byte
	link     string
}

// baseEntries reads the host files and returns the base layer's entries. A
// missing or unusable file is an error naming it and the package that
// provides it.
func baseEntries(b BaseFiles) ([]entry, error) {
	certs, err := os.ReadFile(b.CACerts)
	if err != nil {
		return nil, fmt.Errorf("base file: CA certificates: %w (Debian's ca-certificates package provides %s)", err, CACertsPath)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(certs) {
		return nil, fmt.Errorf("base file: CA certificates %s holds no PEM certificate", b.CACerts)
	}
	entries := []entry{
		dir("/etc", 0o755), dir("/etc/ssl", 0o755), dir("/etc/ssl/certs", 0o755),
		file("/etc/passwd", 0o644, []byte(passwd)),
		file("/etc/group", 0o644, []byte(group)),
		file(CACertsPath, 0o644, certs),
		{name: HomeDir, typ: tar.TypeDir, mode: 0o700, uid: UID, gid: GID},
		dir("/home", 0o755),
		dir("/root", 0o700),
		dir("/tmp", 0o1777),
		dir("/usr", 0o755), dir("/usr/share", 0o755),
	}
	zone, err := zoneinfoEntries(b.Zoneinfo)
	if err != nil {
		return nil, err
	}
	return append(entries, zone...), nil
}

// zoneinfoEntries copies a time zone database directory under
// ZoneinfoPath. Symlinks stay symlinks; one whose target leaves the
// directory (Debian's localtime points at /etc/localtime) is left out, as it
// would dangle in the image.
func zoneinfoEntries(root string) ([]entry, error) {
	utc, err := os.ReadFile(filepath.Join(root, "UTC"))
	if err != nil {
		return nil, fmt.Errorf("base file: time zone database: %w (Debian's tzdata package provides %s)", err, ZoneinfoPath)
	}
	if !bytes.HasPrefix(utc, []byte("TZif")) {
		return nil, fmt.Errorf("base file: time zone database: %s is not a TZif file", filepath.Join(root, "UTC"))
	}
	entries := []entry{dir(ZoneinfoPath, 0o755)}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		name := path.Join(ZoneinfoPath, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			entries = append(entries, dir(name, 0o755))
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			resolved := path.Join(path.Dir(name), filepath.ToSlash(target))
			if path.IsAbs(target) || !strings.HasPrefix(resolved, ZoneinfoPath+"/") {
				return nil
			}
			entries = append(entries, entry{name: name, typ: tar.TypeSymlink, mode: 0o777, link: filepath.ToSlash(target)})
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			entries = append(entries, file(name, 0o644, data))
		default:
			return fmt.Errorf("%s is neither a file, a directory nor a symlink", p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("base file: time zone database: %w", err)
	}
	return entries, nil
}

func dir(name string, mode int64) entry {
	return entry{name: name, typ: tar.TypeDir, mode: mode}
}

func file(name string, mode int64, data []byte) entry {
	return entry{name: name, typ: tar.TypeReg, mode: mode, data: data}
}

// layerTar writes entries as a layer tar: sorted by name, every time stamp
// mtime, owners numeric, so the same inputs give the same bytes and digest.
func layerTar(entries []entry, mtime time.Time) ([]byte, error) {
	sorted := append([]entry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i, e := range sorted {
		if i > 0 && sorted[i-1].name == e.name {
			return nil, fmt.Errorf("layer: %s added twice", e.name)
		}
		name := strings.TrimPrefix(e.name, "/")
		if e.typ == tar.TypeDir {
			name += "/"
		}
		h := &tar.Header{
			Typeflag: e.typ,
			Name:     name,
			Linkname: e.link,
			Mode:     e.mode,
			Uid:      e.uid,
			Gid:      e.gid,
			Size:     int64(len(e.data)),
			ModTime:  mtime,
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer: %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("layer: %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
