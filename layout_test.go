package kneewatch

import (
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/kneewatch/kneewatch"

// lab are the packages that are not the product: the simulator, the
// detection bench and the demo. Nothing the product runs may import them.
var lab = []string{module + "/internal/sim", module + "/internal/detection", module + "/internal/demo"}

// labImporters may import the lab: the lab itself and what only runs it
// (everything under internal/, the bench's command, the end-to-end tests)
// and, in the kneewatch command, the files of the lab's subcommands
// (`kneewatch demo`, `kneewatch sim …`), which share the binary.
func labImporter(pkg, file string) bool {
	switch {
	case strings.HasPrefix(pkg, module+"/internal/"),
		pkg == module+"/cmd/kneewatch-bench",
		pkg == module+"/e2e":
		return true
	case pkg == module+"/cmd/kneewatch":
		return slices.Contains([]string{"demo.go", "sim.go", "simknee.go", "simserve.go"}, file)
	}
	return false
}

// TestTheProductDoesNotImportTheLab reads the imports of every non-test Go
// file of the module (the files a build links) and fails on a product file
// that imports a lab package: the product must build, and be read, without
// the simulator.
func TestTheProductDoesNotImportTheLab(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if dir != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && dir != "." {
			return filepath.SkipDir // another module (the pinned tools' wrappers)
		}
		bp, err := build.ImportDir(dir, 0)
		if err != nil {
			return nil // no Go files for this platform
		}
		pkg := module
		if dir != "." {
			pkg += "/" + filepath.ToSlash(dir)
		}
		for _, file := range bp.GoFiles {
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, file), nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			checked++
			for _, spec := range f.Imports {
				path, _ := strconv.Unquote(spec.Path.Value)
				if slices.Contains(lab, path) && !labImporter(pkg, file) {
					t.Errorf("%s imports %s: the product must not link the lab", filepath.Join(dir, file), path)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("read only %d files: the walk missed the module", checked)
	}
}
