package sweep

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
)

// Plot size: three panels stacked, sharing the concurrency axis.
const (
	plotWidth  = 7 * vg.Inch
	plotHeight = 9 * vg.Inch
)

var (
	colorOutput  = color.RGBA{R: 31, G: 119, B: 180, A: 255}  // blue
	colorGoodput = color.RGBA{R: 44, G: 160, B: 44, A: 255}   // green
	colorLatency = color.RGBA{R: 148, G: 103, B: 189, A: 255} // purple
	colorSLO     = color.RGBA{R: 214, G: 39, B: 40, A: 255}   // red
	colorKnee    = color.RGBA{R: 255, G: 127, B: 14, A: 255}  // orange
	// colorClosedKnee marks the closed-loop knee beside a poisson one.
	colorClosedKnee = color.RGBA{R: 127, G: 127, B: 127, A: 255} // grey
)

// PlotFormat returns the image format for a plot file name: "png" or "svg".
func PlotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".png", ".svg":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("plot %q: the file name must end in .png or .svg", path)
	}
}

// SavePlot draws the profile's curve to path, as PNG or SVG by its extension.
func SavePlot(path string, p *knee.Profile) error {
	format, err := PlotFormat(path)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := WritePlot(&buf, p, format); err != nil {
		return err
	}
	return WriteFileAtomic(path, buf.Bytes())
}

// WritePlot draws the profile's curve: output tokens/s and goodput, then
// p99 TTFT and p99 TPOT with the SLO thresholds, all against concurrency
// (log scale), with the knee marked in every panel. Points that broke the
// SLO are drawn as crosses, the others as dots. format is "png" or "svg".
func WritePlot(w io.Writer, p *knee.Profile, format string) error {
	return WritePlotWith(w, p, format, PlotExtras{})
}

// PlotExtras add to a profile's plot what a sweep does not know: a title
// and a replica's live operating point (the dashboards' knee panel).
type PlotExtras struct {
	Title string          // replaces the profile's title when set
	Live  *OperatingPoint // drawn as a large point in every panel when set
}

// OperatingPoint is where a replica runs now: in-flight requests, output
// tokens/s and p99 latencies. An unknown (NaN) value is not drawn. Each
// panel's legend names the point by Label ("demo-2 now", say) followed by
// its in-flight requests and that panel's own value.
type OperatingPoint struct {
	Label                           string
	Concurrency, OutputTokensPerSec float64
	TTFTP99Seconds, TPOTP99Seconds  float64
}

// legend is the live point's legend entry in one panel: the label, the
// in-flight requests and the panel's value.
func (l *OperatingPoint) legend(value string) string {
	return fmt.Sprintf("%s: %s in flight, %s", l.Label, strconv.FormatFloat(l.Concurrency, 'f', 0, 64), value)
}

// colorLive marks the live operating point.
var colorLive = color.RGBA{R: 214, G: 39, B: 40, A: 255} // red

// WritePlotWith is WritePlot with extras.
func WritePlotWith(w io.Writer, p *knee.Profile, format string, x PlotExtras) error {
	if len(p.Points) == 0 {
		return fmt.Errorf("plot: the profile has no points")
	}
	panels := []*plot.Plot{
		throughputPanel(p),
		latencyPanel(p, "TTFT", func(pt knee.Point) float64 { return pt.TTFT.P99 }, p.SLO.TTFT.D()),
		latencyPanel(p, "TPOT", func(pt knee.Point) float64 { return pt.TPOT.P99 }, p.SLO.TPOT.D()),
	}
	panels[0].Title.Text = title(p)
	if x.Title != "" {
		panels[0].Title.Text = x.Title
	}
	if l := x.Live; l != nil {
		addLive(panels[0], l, l.OutputTokensPerSec, 1, strconv.FormatFloat(l.OutputTokensPerSec, 'f', 0, 64)+" tok/s")
		addLive(panels[1], l, l.TTFTP99Seconds, latencyScale(p.SLO.TTFT.D()), "p99 TTFT "+latencyText(l.TTFTP99Seconds, p.SLO.TTFT.D()))
		addLive(panels[2], l, l.TPOTP99Seconds, latencyScale(p.SLO.TPOT.D()), "p99 TPOT "+latencyText(l.TPOTP99Seconds, p.SLO.TPOT.D()))
	}
	for _, pl := range panels[:len(panels)-1] {
		pl.X.Label.Text = ""
	}
	// The glyphs' meaning, once, in the first panel's legend.
	if slices.ContainsFunc(p.Points, func(pt knee.Point) bool { return !pt.MeetsSLO }) {
		s, _ := plotter.NewScatter(plotter.XYs{})
		s.Color, s.Shape, s.Radius = color.Black, draw.CrossGlyph{}, vg.Points(4)
		panels[0].Legend.Add("cross: a level that broke the SLO", s)
	}
	for _, pl := range panels {
		// Room above the curves for the legend (three or four lines), which
		// sits top left.
		pl.Y.Max *= 1.3
	}

	var canvas interface {
		vg.CanvasSizer
		io.WriterTo
	}
	var dc draw.Canvas
	switch format {
	case "png":
		img := vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(120))
		canvas, dc = vgimg.PngCanvas{Canvas: img}, draw.New(img)
	case "svg":
		svg := vgsvg.New(plotWidth, plotHeight)
		canvas, dc = svg, draw.New(svg)
	default:
		return fmt.Errorf("plot: unknown format %q, want png or svg", format)
	}
	// White background: transparent PNGs read badly in dark viewers.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(10), PadY: vg.Points(10)}
	grid := make([][]*plot.Plot, len(panels))
	for i, pl := range panels {
		grid[i] = []*plot.Plot{pl}
	}
	for i, c := range plot.Align(grid, tiles, dc) {
		panels[i].Draw(c[0])
	}
	if _, err := canvas.WriteTo(w); err != nil {
		return fmt.Errorf("plot: writing %s: %w", format, err)
	}
	return nil
}

func title(p *knee.Profile) string {
	var b strings.Builder
	if p.Knee.Arrivals == knee.ArrivalsPoisson {
		fmt.Fprintf(&b, "%s · workload %s · poisson knee %s in flight at %g req/s (closed loop ≈ %s)", p.Match.Model, p.Workload.Mix.Name,
			formatConcurrency(p.Knee.Concurrency), p.Knee.RequestsPerSecond, formatConcurrency(p.Knee.ClosedLoopConcurrency))
	} else {
		fmt.Fprintf(&b, "%s · workload %s · knee at concurrency %s", p.Match.Model, p.Workload.Mix.Name, formatConcurrency(p.Knee.Concurrency))
	}
	if p.Knee.LimitingResource != "" {
		fmt.Fprintf(&b, " (%s)", strings.ReplaceAll(string(p.Knee.LimitingResource), "_", " "))
	}
	if p.Metadata.Partial {
		b.WriteString(" · partial")
	}
	return b.String()
}

func formatConcurrency(c float64) string { return strconv.FormatFloat(c, 'f', -1, 64) }

// basePanel is a panel with the concurrency axis on a log-2 scale.
func basePanel(p *knee.Profile, ylabel string) *plot.Plot {
	pl := plot.New()
	pl.X.Label.Text = "concurrency (requests in flight)"
	pl.Y.Label.Text = ylabel
	pl.X.Scale = plot.LogScale{}
	pl.X.Tick.Marker = powersOfTwoTicks{}
	lo, hi := p.Points[0].Concurrency, p.Points[len(p.Points)-1].Concurrency
	pl.X.Min, pl.X.Max = lo/1.2, hi*1.2
	pl.Y.Min = 0
	pl.Y.Tick.Marker = plainTicks{}
	pl.Legend.Top = true
	pl.Legend.Left = true
	pl.Add(plotter.NewGrid())
	return pl
}

func throughputPanel(p *knee.Profile) *plot.Plot {
	pl := basePanel(p, "output tokens/s")
	ymax := 0.0
	for _, pt := range p.Points {
		ymax = max(ymax, pt.OutputTokensPerSecond)
	}
	addSeries(pl, p, "output tok/s", colorOutput, func(pt knee.Point) float64 { return pt.OutputTokensPerSecond })
	// A curve read back from kneewatch's series has no goodput: no line of zeros.
	if slices.ContainsFunc(p.Points, func(pt knee.Point) bool { return pt.GoodputTokensPerSecond > 0 }) {
		addSeries(pl, p, "goodput tok/s (requests meeting the SLO)", colorGoodput, func(pt knee.Point) float64 { return pt.GoodputTokensPerSecond })
	}
	finishPanel(pl, p, ymax*1.15)
	return pl
}

// latencyPanel plots one latency's p99 in milliseconds or seconds, with
// the SLO threshold as a dashed line.
func latencyPanel(p *knee.Profile, name string, value func(knee.Point) float64, slo time.Duration) *plot.Plot {
	threshold := slo.Seconds()
	scale, unit := latencyScale(slo), "ms"
	if scale == 1 {
		unit = "s"
	}
	pl := basePanel(p, fmt.Sprintf("p99 %s (%s)", name, unit))
	ymax := threshold * scale
	for _, pt := range p.Points {
		ymax = max(ymax, value(pt)*scale)
	}
	addSeries(pl, p, "p99 "+name, colorLatency, func(pt knee.Point) float64 { return value(pt) * scale })
	sloLine, _ := plotter.NewLine(plotter.XYs{{X: pl.X.Min, Y: threshold * scale}, {X: pl.X.Max, Y: threshold * scale}})
	sloLine.Color, sloLine.Width, sloLine.Dashes = colorSLO, vg.Points(1.5), []vg.Length{vg.Points(6), vg.Points(3)}
	pl.Add(sloLine)
	pl.Legend.Add(fmt.Sprintf("SLO: %s %s ≤ %s", measure.QuantileLabel(p.SLO.Quantile), name, slo), sloLine)
	finishPanel(pl, p, ymax*1.15)
	return pl
}

// latencyScale is the factor from seconds to a latency panel's unit:
// milliseconds, or seconds for an SLO of 2 s or more.
func latencyScale(slo time.Duration) float64 {
	if slo.Seconds() >= 2 {
		return 1
	}
	return 1e3
}

// latencyText is a latency in a latency panel's unit (see latencyScale).
func latencyText(seconds float64, slo time.Duration) string {
	if latencyScale(slo) == 1 {
		return strconv.FormatFloat(seconds, 'g', 3, 64) + " s"
	}
	return strconv.FormatFloat(seconds*1e3, 'f', 0, 64) + " ms"
}

// addLive draws the live operating point (x: in flight) at y, scaled, and
// raises the panel's y range to hold it; value is the panel's reading in
// its legend entry.
func addLive(pl *plot.Plot, l *OperatingPoint, y, scale float64, value string) {
	if math.IsNaN(l.Concurrency) || math.IsNaN(y) {
		return
	}
	s, _ := plotter.NewScatter(plotter.XYs{{X: l.Concurrency, Y: y * scale}})
	s.Color, s.Shape, s.Radius = colorLive, draw.CircleGlyph{}, vg.Points(6)
	pl.Add(s)
	pl.Legend.Add(l.legend(value), s)
	pl.Y.Max = max(pl.Y.Max, y*scale*1.15)
	pl.X.Max = max(pl.X.Max, l.Concurrency*1.2)
}

// addSeries draws a line through the points and a glyph at each: a dot
// where the level met the SLO, a cross where it broke it.
func addSeries(pl *plot.Plot, p *knee.Profile, name string, c color.Color, value func(knee.Point) float64) {
	var all, good, bad plotter.XYs
	for _, pt := range p.Points {
		xy := plotter.XY{X: pt.Concurrency, Y: value(pt)}
		all = append(all, xy)
		if pt.MeetsSLO {
			good = append(good, xy)
		} else {
			bad = append(bad, xy)
		}
	}
	line, _ := plotter.NewLine(all)
	line.Color, line.Width = c, vg.Points(1.5)
	pl.Add(line)
	if len(good) > 0 {
		s, _ := plotter.NewScatter(good)
		s.Color, s.Shape, s.Radius = c, draw.CircleGlyph{}, vg.Points(3)
		pl.Add(s)
	}
	if len(bad) > 0 {
		s, _ := plotter.NewScatter(bad)
		s.Color, s.Shape, s.Radius = c, draw.CrossGlyph{}, vg.Points(4)
		pl.Add(s)
	}
	pl.Legend.Add(name, line)
}

// finishPanel fixes the y range and marks the knee with a vertical line.
func finishPanel(pl *plot.Plot, p *knee.Profile, ymax float64) {
	if !(ymax > 0) || math.IsInf(ymax, 0) {
		ymax = 1
	}
	pl.Y.Max = ymax
	if p.Knee.Concurrency <= 0 {
		return
	}
	kneeLine := func(x float64, c color.Color, label string) {
		k := verticalLine{x: x, LineStyle: draw.LineStyle{Color: c, Width: vg.Points(2), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}}
		pl.Add(k)
		pl.Legend.Add(label, k)
	}
	if p.Knee.Arrivals == knee.ArrivalsPoisson {
		// The curve is closed-loop; the poisson knee sits on it at its
		// mean in-flight load.
		kneeLine(p.Knee.ClosedLoopConcurrency, colorClosedKnee, "closed-loop knee ≈ concurrency "+formatConcurrency(p.Knee.ClosedLoopConcurrency))
		kneeLine(p.Knee.Concurrency, colorKnee, fmt.Sprintf("poisson knee: %s in flight at %g req/s", formatConcurrency(p.Knee.Concurrency), p.Knee.RequestsPerSecond))
		return
	}
	kneeLine(p.Knee.Concurrency, colorKnee, "knee: concurrency "+formatConcurrency(p.Knee.Concurrency))
}

// verticalLine is a line at x across the panel's whole height, whatever
// its y range ends up being; it does not widen the range.
type verticalLine struct {
	x float64
	draw.LineStyle
}

func (l verticalLine) Plot(c draw.Canvas, pl *plot.Plot) {
	x := pl.X.Norm(l.x)
	if x < 0 || x > 1 {
		return
	}
	at := c.Min.X + vg.Length(x)*(c.Max.X-c.Min.X)
	c.StrokeLine2(l.LineStyle, at, c.Min.Y, at, c.Max.Y)
}

// Thumbnail draws the legend's sample: a horizontal stroke, as a line's.
func (l verticalLine) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(l.LineStyle, c.Min.X, y, c.Max.X, y)
}

// plainTicks are gonum's default ticks labelled without trailing zeros
// ("7500", not "7500.00"). Where gonum labels fewer than three (0 and 25
// of a 0–30 axis, say), every tick is labelled.
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	labelled := 0
	for _, t := range ticks {
		if t.Label != "" {
			labelled++
		}
	}
	for i := range ticks {
		if ticks[i].Label != "" || labelled < 3 {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'g', 6, 64)
		}
	}
	return ticks
}

// powersOfTwoTicks labels 1, 2, 4, 8, … across the range.
type powersOfTwoTicks struct{}

func (powersOfTwoTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for v := 1.0; v <= hi; v *= 2 {
		if v >= lo {
			ticks = append(ticks, plot.Tick{Value: v, Label: formatConcurrency(v)})
		}
	}
	return ticks
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory, so an interrupted write never leaves a truncated file.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
