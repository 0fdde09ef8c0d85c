// Package release builds kneewatch's container image without a Docker
// engine: the static binary for each platform on a base of files the build
// assembles (CA certificates, tzdata, passwd), as an OCI image index written
// to an OCI layout, and pushes it. The same inputs give the same digests.
//
// What the image runs (user, entrypoint, command, port, labels) is declared
// here once; a test keeps the Dockerfile, the chart and these in step.
package release

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// BinaryPath is where the kneewatch binary sits in the image.
	BinaryPath = "/usr/local/bin/kneewatch"
	// ConfigFile is where the image's default command reads its config:
	// the chart mounts its ConfigMap's kneewatch.yml there.
	ConfigFile = "/etc/kneewatch/kneewatch.yml"
	// Port is kneewatch's default listen port (config.DefaultListenAddress)
	// and the chart's service port.
	Port = 9847
	// Source is the repository the image is built from.
	Source = "https://github.com/kneewatch/kneewatch"
)

// Entrypoint and Cmd are the image's defaults: `kneewatch serve` with the
// config where the chart mounts it.
var (
	Entrypoint = []string{BinaryPath}
	Cmd        = []string{"serve", "--config.file=" + ConfigFile}
)

// OCI annotation keys the image's labels and the index's annotations use.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelRevision = "org.opencontainers.image.revision"
	LabelVersion  = "org.opencontainers.image.version"
	LabelLicenses = "org.opencontainers.image.licenses"
	LabelTitle    = "org.opencontainers.image.title"
)

// Binary is the kneewatch binary for one platform.
type Binary struct {
	Platform v1.Platform
	Path     string
}

// Options are a release's inputs.
type Options struct {
	// Version is the VERSION file's; the chart and binaries must agree.
	Version string
	// Revision is the git commit the release is built from.
	Revision string
	// Created stamps the config and every file; the commit's time keeps
	// builds of one commit identical.
	Created time.Time
	Chart   Chart
	Base    BaseFiles
	// License is the repository's (ReadLicense): its SPDX identifier
	// labels the image, and its texts are in it under LicenseDir.
	License License
	// Binaries are the images' binaries, one per platform, in index order.
	Binaries []Binary
	// ModuleCache is the Go module cache the binaries were built from:
	// every linked module's license files are copied from it under
	// ThirdPartyDir. Empty leaves them out (tests of the image's layout).
	ModuleCache string
}

// Labels are the image's org.opencontainers.image.* labels.
func (o Options) Labels() map[string]string {
	return map[string]string{
		LabelSource:   Source,
		LabelRevision: o.Revision,
		LabelVersion:  o.Version,
		LabelLicenses: o.License.SPDX,
		LabelTitle:    "kneewatch",
	}
}

// Build checks the inputs (versions, binaries, base files) and returns the
// multi-platform image index. It reads every input into memory: the whole
// image is a few tens of megabytes.
func Build(ctx context.Context, o Options) (v1.ImageIndex, error) {
	if err := o.Chart.Check(o.Version); err != nil {
		return nil, err
	}
	if len(o.Binaries) == 0 {
		return nil, fmt.Errorf("no binaries to build images of")
	}
	created := o.Created.UTC().Truncate(time.Second)
	base, err := baseEntries(o.Base)
	if err != nil {
		return nil, err
	}
	licenses, err := licenseEntries(o.License)
	if err != nil {
		return nil, err
	}
	base = append(base, licenses...)
	if o.ModuleCache != "" {
		third, err := thirdPartyEntries(o.Binaries, o.ModuleCache)
		if err != nil {
			return nil, err
		}
		base = append(base, third...)
	}
	baseLayer, err := layer(base, created)
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	seen := map[string]bool{}
	for _, b := range o.Binaries {
		if seen[b.Platform.String()] {
			return nil, fmt.Errorf("two binaries for %s", b.Platform.String())
		}
		seen[b.Platform.String()] = true
		if err := checkBinary(ctx, b.Path, b.Platform, o.Version, o.Revision); err != nil {
			return nil, err
		}
		img, err := image(o, created, baseLayer, b)
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", b.Platform.String(), err)
		}
		platform := b.Platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &platform},
		})
	}
	annotations := o.Labels()
	delete(annotations, LabelTitle)
	return mutate.Annotations(idx, annotations).(v1.ImageIndex), nil
}

// image is the image of one platform: the base layer, then the binary.
func image(o Options, created time.Time, baseLayer v1.Layer, b Binary) (v1.Image, error) {
	bin, err := os.ReadFile(b.Path)
	if err != nil {
		return nil, err
	}
	binLayer, err := layer([]entry{
		dir("/usr", 0o755), dir("/usr/local", 0o755), dir("/usr/local/bin", 0o755),
		file(BinaryPath, 0o755, bin),
	}, created)
	if err != nil {
		return nil, err
	}
	cfg := &v1.ConfigFile{
		Architecture: b.Platform.Architecture,
		OS:           b.Platform.OS,
		Variant:      b.Platform.Variant,
		Created:      v1.Time{Time: created},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			User: strconv.Itoa(UID) + ":" + strconv.Itoa(GID),
			// distroless's environment, so the Dockerfile's image matches.
			Env: []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"SSL_CERT_FILE=" + CACertsPath,
			},
			Entrypoint:   Entrypoint,
			Cmd:          Cmd,
			WorkingDir:   HomeDir,
			ExposedPorts: map[string]struct{}{strconv.Itoa(Port) + "/tcp": {}},
			Labels:       o.Labels(),
		},
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img,
		mutate.Addendum{Layer: baseLayer, History: v1.History{
			Created: v1.Time{Time: created}, CreatedBy: "kneewatch-release: passwd, group, CA certificates, tzdata",
		}},
		mutate.Addendum{Layer: binLayer, History: v1.History{
			Created: v1.Time{Time: created}, CreatedBy: "kneewatch-release: " + BinaryPath,
		}},
	)
}

// layer is a gzip-compressed OCI layer of the entries.
func layer(entries []entry, mtime time.Time) (v1.Layer, error) {
	data, err := layerTar(entries, mtime)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
