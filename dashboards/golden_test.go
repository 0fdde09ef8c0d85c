package dashboards

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

// The golden files are what users import: a change to a dashboard shows up
// as a reviewable diff of testdata/.
func TestRenderedDashboardsMatchTheGoldenFiles(t *testing.T) {
	for _, format := range Formats() {
		files, err := Render(DefaultOptions(), format)
		if err != nil {
			t.Fatalf("render %s: %v", format, err)
		}
		if len(files) != len(builders) {
			t.Fatalf("render %s: %d files, want one per dashboard (%d)", format, len(files), len(builders))
		}
		for _, f := range files {
			path := filepath.Join("testdata", f.Name)
			if *update {
				if err := os.WriteFile(path, f.Data, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./dashboards -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(f.Data)); diff != "" {
				t.Errorf("%s differs from the golden file (-golden +rendered; go test ./dashboards -update to accept):\n%s", path, diff)
			}
		}
	}
}
