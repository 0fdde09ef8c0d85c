package sweep

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
)

// truthProfile is the simulator's ground-truth profile for the 8B/H100 chat
// mix: a real curve with a knee, measured in virtual time in well under a second.
func truthProfile(t *testing.T) *knee.Profile {
	t.Helper()
	p, err := sim.LoadPreset("llama-3.1-8b-h100")
	if err != nil {
		t.Fatal(err)
	}
	prof, err := sim.FindKnee(context.Background(), sim.KneeConfig{
		Engine: sim.Config{Preset: p}, Workload: resolve(t, "chat"), Seed: 1,
		SLO: knee.SLO{TTFT: knee.Duration(200e6), TPOT: knee.Duration(20e6), Quantile: 0.99},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &prof
}

func TestPlotIsADecodablePNGOfTheExpectedSize(t *testing.T) {
	prof := truthProfile(t)
	path := filepath.Join(t.TempDir(), "knee.png")
	if err := SavePlot(path, prof); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the plot is not a PNG: %v", err)
	}
	// 7 × 9 inches at 120 dpi.
	if b := img.Bounds(); b.Dx() != 840 || b.Dy() != 1080 {
		t.Errorf("plot is %dx%d pixels, want 840x1080", b.Dx(), b.Dy())
	}
	// The knee mark is orange: some pixel of that colour must be drawn.
	found := false
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y && !found; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if r>>8 == 255 && g>>8 == 127 && b>>8 == 14 {
				found = true
				break
			}
		}
	}
	if !found {
		t.Error("no pixel has the knee mark's colour")
	}
	if dir := os.Getenv("SWEEP_PLOT_DIR"); dir != "" {
		data, _ := os.ReadFile(path)
		os.WriteFile(filepath.Join(dir, "truth-knee.png"), data, 0o644)
	}
}

func TestPlotAsSVGNamesTheKneeAndTheSLOs(t *testing.T) {
	prof := truthProfile(t)
	var buf bytes.Buffer
	if err := WritePlot(&buf, prof, "svg"); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	for _, want := range []string{"<svg", "knee: concurrency " + formatConcurrency(prof.Knee.Concurrency), "SLO: p99 TTFT ≤ 200ms", "SLO: p99 TPOT ≤ 20ms", "goodput tok/s"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the SVG does not contain %q", want)
		}
	}
}

func TestPlotOfAPoissonProfileMarksBothKnees(t *testing.T) {
	prof := truthProfile(t)
	closed := prof.Knee.Concurrency
	prof.Knee.Arrivals, prof.Knee.ClosedLoopConcurrency = knee.ArrivalsPoisson, closed
	prof.Knee.Concurrency, prof.Knee.RequestsPerSecond = closed*0.6, 12.5
	var buf bytes.Buffer
	if err := WritePlot(&buf, prof, "svg"); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	for _, want := range []string{
		"closed-loop knee ≈ concurrency " + formatConcurrency(closed),
		"poisson knee: " + formatConcurrency(closed*0.6) + " in flight at 12.5 req/s",
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("the SVG does not contain %q", want)
		}
	}
}

func TestPlotFormatFollowsTheExtension(t *testing.T) {
	for _, tc := range []struct{ path, want, err string }{
		{"knee.png", "png", ""},
		{"out/KNEE.SVG", "svg", ""},
		{"knee.jpg", "", `plot "knee.jpg": the file name must end in .png or .svg`},
	} {
		got, err := PlotFormat(tc.path)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("PlotFormat(%q) = %q, %v; want %q, %q", tc.path, got, err, tc.want, tc.err)
		}
	}
}
