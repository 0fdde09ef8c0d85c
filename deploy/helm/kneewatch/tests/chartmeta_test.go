package tests

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/internal/release"
)

// TestChartMetadataForArtifactHub checks what Artifact Hub shows: an icon
// that is in this repository (the URL's path below main/), maintainers, and
// its annotations parsing as the YAML lists Artifact Hub reads.
func TestChartMetadataForArtifactHub(t *testing.T) {
	var chart struct {
		Icon        string            `yaml:"icon"`
		AppVersion  string            `yaml:"appVersion"`
		Maintainers []map[string]any  `yaml:"maintainers"`
		Annotations map[string]string `yaml:"annotations"`
	}
	data, err := os.ReadFile(filepath.Join(chartDir(), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	const prefix = "https://raw.githubusercontent.com/kneewatch/kneewatch/main/"
	rel, ok := strings.CutPrefix(chart.Icon, prefix)
	if !ok {
		t.Fatalf("icon %q is not a file of this repository's main branch", chart.Icon)
	}
	svg, err := os.ReadFile(filepath.Join(moduleRoot(), rel))
	if err != nil {
		t.Fatalf("icon: %v", err)
	}
	var root struct{ XMLName xml.Name }
	if err := xml.Unmarshal(svg, &root); err != nil || root.XMLName.Local != "svg" {
		t.Errorf("icon %s is not an SVG document (%v)", rel, err)
	}
	if len(chart.Maintainers) == 0 || chart.Maintainers[0]["name"] == "" {
		t.Errorf("no maintainers: %v", chart.Maintainers)
	}
	for _, key := range []string{"artifacthub.io/links", "artifacthub.io/images"} {
		var list []map[string]string
		if err := yaml.Unmarshal([]byte(chart.Annotations[key]), &list); err != nil || len(list) == 0 {
			t.Errorf("annotation %s is not a YAML list: %v %q", key, err, chart.Annotations[key])
		}
	}
	var images []map[string]string
	_ = yaml.Unmarshal([]byte(chart.Annotations["artifacthub.io/images"]), &images)
	if len(images) > 0 && !strings.HasSuffix(images[0]["image"], ":"+chart.AppVersion) {
		t.Errorf("artifacthub.io/images %q is not tagged with appVersion %s", images[0]["image"], chart.AppVersion)
	}
	if chart.Annotations["artifacthub.io/category"] == "" {
		t.Error("no artifacthub.io/category")
	}
	license, err := release.ReadLicense(filepath.Join(moduleRoot(), "LICENSE"), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := chart.Annotations["artifacthub.io/license"]; got != license.SPDX {
		t.Errorf("artifacthub.io/license is %q; the repository's LICENSE is %s", got, license.SPDX)
	}
}
