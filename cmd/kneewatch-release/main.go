// Command kneewatch-release builds kneewatch's container image without a
// Docker engine and pushes it (`make image`; the release workflow). This file
// only wires flags; the image is package internal/release.
//
//	kneewatch-release image --binary linux/amd64=PATH --binary linux/arm64=PATH --out dist/image
//	kneewatch-release push --layout dist/image [--to REF]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"go/build"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kneewatch/kneewatch/internal/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "kneewatch-release:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("want a command: image, push or licenses")
	}
	switch args[0] {
	case "image":
		return runImage(ctx, args[1:], stdout, stderr)
	case "push":
		return runPush(ctx, args[1:], stdout, stderr)
	case "licenses":
		return runLicenses(args[1:], stdout, stderr)
	default:
		return fmt.Errorf("unknown command %q: want image, push or licenses", args[0])
	}
}

// binaries collects repeated --binary OS/ARCH=PATH flags.
type binaries []release.Binary

func (b *binaries) String() string { return fmt.Sprint(*b) }

func (b *binaries) Set(s string) error {
	platform, path, ok := strings.Cut(s, "=")
	if !ok || path == "" {
		return fmt.Errorf("%q is not OS/ARCH=PATH", s)
	}
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		return err
	}
	*b = append(*b, release.Binary{Platform: *p, Path: path})
	return nil
}

func runImage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	versionFile := fs.String("version-file", "VERSION", "the file holding the release version")
	revision := fs.String("revision", "", "git commit the release is built from (labels; the binaries must report it)")
	created := fs.Int64("created", 0, "creation time, Unix seconds (the commit's time, for identical rebuilds)")
	chartDir := fs.String("chart", "deploy/helm/kneewatch", "Helm chart whose versions must equal VERSION and whose image.repository names the image")
	caCerts := fs.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "PEM bundle of CA certificates (Debian's ca-certificates)")
	zoneinfo := fs.String("zoneinfo", "/usr/share/zoneinfo", "time zone database directory (Debian's tzdata)")
	licenseFile := fs.String("license-file", "LICENSE", "the repository's license text: its SPDX identifier labels the image, and it is copied in")
	noticeFile := fs.String("notice-file", "NOTICE", "the repository's NOTICE, copied in beside the license (empty: none)")
	moduleCache := fs.String("module-cache", defaultModuleCache(), "Go module cache the binaries were built from: each linked module's license\n"+
		"files are copied from it into the image under "+release.ThirdPartyDir+" (default: go env GOMODCACHE)")
	out := fs.String("out", "dist/image", "OCI layout directory to write")
	var bins binaries
	fs.Var(&bins, "binary", "OS/ARCH=PATH of a static kneewatch binary (repeat per platform)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	version, err := release.ReadVersion(*versionFile)
	if err != nil {
		return err
	}
	chart, err := release.ReadChart(*chartDir)
	if err != nil {
		return err
	}
	license, err := release.ReadLicense(*licenseFile, *noticeFile)
	if err != nil {
		return err
	}
	opts := release.Options{
		License:     license,
		Version:     version,
		Revision:    *revision,
		Created:     time.Unix(*created, 0),
		Chart:       chart,
		Base:        release.BaseFiles{CACerts: *caCerts, Zoneinfo: *zoneinfo},
		Binaries:    bins,
		ModuleCache: *moduleCache,
	}
	idx, err := release.Build(ctx, opts)
	if err != nil {
		return err
	}
	ref := chart.Image()
	if err := release.WriteLayout(*out, idx, ref); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\t%s\t%s\n", *out, ref, digest)
	if err := printPlatforms(stdout, idx); err != nil {
		return err
	}
	return printBase(stdout, idx, opts.Base, release.DebianVersions(ctx, release.BasePackages...))
}

// printBase names the base layer (one blob in every platform's image) and
// the build host's files it holds, with the Debian packages' versions: two
// builds of one commit give the same digests when these match.
func printBase(w io.Writer, idx v1.ImageIndex, base release.BaseFiles, versions map[string]string) error {
	platforms, err := release.Platforms(idx)
	if err != nil {
		return err
	}
	if len(platforms) == 0 {
		return nil
	}
	layers, err := platforms[0].Image.Layers()
	if err != nil {
		return err
	}
	if len(layers) == 0 {
		return fmt.Errorf("the %s image has no layers", platforms[0].Platform.String())
	}
	digest, err := layers[0].Digest()
	if err != nil {
		return err
	}
	pkg := func(name string) string {
		if v, ok := versions[name]; ok {
			return name + " " + v
		}
		return name + " version unknown (not installed by dpkg on this host)"
	}
	fmt.Fprintf(w, "  base layer\t%s\tCA certificates %s (%s), time zone database %s (%s), from this host\n",
		digest, base.CACerts, pkg(release.CACertsPackage), base.Zoneinfo, pkg(release.ZoneinfoPackage))
	return nil
}

func printPlatforms(w io.Writer, idx v1.ImageIndex) error {
	platforms, err := release.Platforms(idx)
	if err != nil {
		return err
	}
	for _, p := range platforms {
		fmt.Fprintf(w, "  %s\t%s\t%s bytes\n", p.Platform.String(), p.Digest, strconv.FormatInt(p.Size, 10))
	}
	return nil
}

func runPush(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("layout", "dist/image", "OCI layout `make image` wrote")
	to := fs.String("to", "", "reference to push to (default: the one the layout names, the chart's image)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	idx, ref, err := release.ReadLayout(*dir)
	if err != nil {
		return err
	}
	if *to != "" {
		ref = *to
	}
	// The keychain reads `docker login`'s config (docker/login-action
	// writes it in the release workflow); credentials are never printed.
	digest, err := release.Push(ctx, idx, ref, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pushed %s\n%s\n", ref, digest)
	return printPlatforms(stdout, idx)
}

// defaultModuleCache is where `go build` keeps modules when GOMODCACHE is
// not set: the first GOPATH entry's pkg/mod.
func defaultModuleCache() string {
	if c := os.Getenv("GOMODCACHE"); c != "" {
		return c
	}
	gopath := filepath.SplitList(build.Default.GOPATH)
	if len(gopath) == 0 {
		return ""
	}
	return filepath.Join(gopath[0], "pkg", "mod")
}

// runLicenses writes the license files of every module linked into the
// binaries to a directory, laid out as the image's third-party licenses:
// the Dockerfile's build stage runs it so its image carries them too.
func runLicenses(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("licenses", flag.ContinueOnError)
	fs.SetOutput(stderr)
	moduleCache := fs.String("module-cache", defaultModuleCache(), "Go module cache the binaries were built from (default: go env GOMODCACHE)")
	out := fs.String("out", "", "directory to write the licenses to, laid out as "+release.ThirdPartyDir)
	var bins binaries
	fs.Var(&bins, "binary", "OS/ARCH=PATH of a kneewatch binary (repeat per platform)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case *out == "":
		return errors.New("--out: name the directory to write the licenses to")
	case len(bins) == 0:
		return errors.New("--binary: name at least one binary whose modules' licenses to write")
	}
	n, err := release.WriteThirdPartyLicenses(bins, *moduleCache, *out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\t%d license files\n", *out, n)
	return nil
}
