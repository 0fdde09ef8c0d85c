package release

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Annotations on the layout's index.json entry naming the image: the tag
// (the OCI convention, read by `skopeo copy oci:DIR:TAG`) and the full
// reference (containerd's, read by `ctr image import`).
const (
	AnnotationRefName   = "org.opencontainers.image.ref.name"
	AnnotationImageName = "io.containerd.image.name"
)

// WriteLayout writes idx as an OCI layout at dir, named ref
// (repository:tag). A layout already there is replaced; any other
// non-empty directory is left alone and is an error.
func WriteLayout(dir string, idx v1.ImageIndex, ref string) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := clearLayout(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		AnnotationRefName:   tag.TagStr(),
		AnnotationImageName: tag.Name(),
	}))
}

func clearLayout(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("%s is not empty and not an OCI layout: not replacing it", dir)
	}
	return os.RemoveAll(dir)
}

// ReadLayout returns the image index WriteLayout wrote at dir and the
// reference it was named.
func ReadLayout(dir string) (v1.ImageIndex, string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, "", fmt.Errorf("%s is not an OCI layout (`make image` writes it): %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, "", err
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	if len(m.Manifests) != 1 {
		return nil, "", fmt.Errorf("%s/index.json lists %d entries, want the one release index", dir, len(m.Manifests))
	}
	d := m.Manifests[0]
	ref := d.Annotations[AnnotationImageName]
	if ref == "" {
		return nil, "", fmt.Errorf("%s/index.json: the index has no %s annotation naming it", dir, AnnotationImageName)
	}
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		return nil, "", err
	}
	return idx, ref, nil
}

// Push writes idx to a registry as ref: every platform's blobs and
// manifest, then the index. It returns the index's digest reference.
func Push(ctx context.Context, idx v1.ImageIndex, ref string, opts ...remote.Option) (name.Digest, error) {
	r, err := name.ParseReference(ref, name.StrictValidation)
	if err != nil {
		return name.Digest{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := remote.WriteIndex(r, idx, append(opts, remote.WithContext(ctx))...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing %s: %w", r, err)
	}
	h, err := idx.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return r.Context().Digest(h.String()), nil
}

// PlatformImage is one platform's image in an index, with the bytes a pull
// of it transfers (manifest, config and compressed layers).
type PlatformImage struct {
	Platform v1.Platform
	Digest   v1.Hash
	Image    v1.Image
	Size     int64
}

// Platforms lists the index's images in order.
func Platforms(idx v1.ImageIndex) ([]PlatformImage, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []PlatformImage
	for _, d := range m.Manifests {
		if d.Platform == nil {
			return nil, fmt.Errorf("index entry %s names no platform", d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		man, err := img.Manifest()
		if err != nil {
			return nil, err
		}
		size := d.Size + man.Config.Size
		for _, l := range man.Layers {
			size += l.Size
		}
		out = append(out, PlatformImage{Platform: *d.Platform, Digest: d.Digest, Image: img, Size: size})
	}
	return out, nil
}
