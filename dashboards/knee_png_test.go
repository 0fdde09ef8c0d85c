package dashboards

import (
	"bytes"
	"fmt"
	"html"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/prometheus"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/sweep"
)

// kneePNG is the knee panel drawn from the demo's query data, for review
// (rewritten with -update; look at it after a change to the panel).
const kneePNG = "testdata/knee-panel.png"

// targetsOf returns a replica dashboard panel's targets, substituted.
func targetsOf(t *testing.T, c card, vars map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, db := range builtDashboards(t, DefaultOptions()) {
		if *db.Uid != ReplicaUID {
			continue
		}
		for _, p := range panels(t, db) {
			if *p.Id != c.id {
				continue
			}
			for _, target := range p.Targets {
				q := target.(prometheus.Dataquery)
				expr, err := substituteWith(q.Expr, vars)
				if err != nil {
					t.Fatal(err)
				}
				out[*q.RefId] = expr
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("the replica dashboard has no panel %q", c.title)
	}
	return out
}

// Must-show 4: the knee panel, rendered. Its queries run over the demo's
// series, and what they return is drawn in the sweep plot's style: the
// profile's curve (throughput, p99 TTFT, p99 TPOT against concurrency) with
// the knee and the replica's live operating point.
func TestTheKneePanelRendersFromTheDemosQueryData(t *testing.T) {
	d := loadDemo(t, true)
	vars := d.resolveVariables(t)
	at := d.last()
	q := targetsOf(t, replicaKnee, vars)
	one := func(ref string) float64 {
		v := d.instant(t, q[ref], at)
		if len(v) != 1 {
			t.Fatalf("knee panel target %s returns %d series, want 1: %s", ref, len(v), q[ref])
		}
		return v[0].F
	}
	byConcurrency := func(ref string) map[float64]float64 {
		out := map[float64]float64{}
		for _, s := range d.instant(t, q[ref], at) {
			c, err := strconv.ParseFloat(s.Metric.Get("concurrency"), 64)
			if err != nil {
				t.Fatalf("knee panel target %s: concurrency label %q: %v", ref, s.Metric.Get("concurrency"), err)
			}
			out[c] = s.F
		}
		return out
	}
	tps, ttft, tpot := byConcurrency("A"), byConcurrency("B"), byConcurrency("C")
	sloTTFT := d.instant(t, targetsOf(t, replicaTTFT, vars)["C"], at)
	sloTPOT := d.instant(t, targetsOf(t, replicaTPOT, vars)["C"], at)
	if len(sloTTFT) != 1 || len(sloTPOT) != 1 {
		t.Fatalf("SLO thresholds: %v, %v; want one each", sloTTFT, sloTPOT)
	}

	p := &knee.Profile{SLO: knee.SLO{
		TTFT: knee.Duration(time.Duration(sloTTFT[0].F * float64(time.Second))),
		TPOT: knee.Duration(time.Duration(sloTPOT[0].F * float64(time.Second))), Quantile: 0.99,
	}}
	for c, v := range tps {
		p.Points = append(p.Points, knee.Point{Concurrency: c, OutputTokensPerSecond: v,
			TTFT: knee.Quantiles{P99: ttft[c]}, TPOT: knee.Quantiles{P99: tpot[c]},
			MeetsSLO: ttft[c] <= sloTTFT[0].F && tpot[c] <= sloTPOT[0].F})
	}
	slices.SortFunc(p.Points, func(a, b knee.Point) int { return int(math.Copysign(1, a.Concurrency-b.Concurrency)) })
	p.Knee = knee.Knee{Concurrency: one("D"), OutputTokensPerSecond: one("E")}
	live := &sweep.OperatingPoint{Concurrency: one("F"), OutputTokensPerSec: one("G"), TTFTP99Seconds: one("H"), TPOTP99Seconds: one("I")}
	live.Label = demoReplica + " now"

	if len(p.Points) < 5 || len(ttft) != len(tps) || len(tpot) != len(tps) {
		t.Fatalf("the curve has %d throughput, %d TTFT and %d TPOT points; want the same 5 or more", len(tps), len(ttft), len(tpot))
	}
	// The demo holds this replica at 0.9 of its knee: left of the knee,
	// with throughput below the knee's.
	if !(live.Concurrency < p.Knee.Concurrency && live.OutputTokensPerSec < p.Knee.OutputTokensPerSecond) {
		t.Errorf("live point %.1f in flight, %.0f tok/s is not below the knee (%.0f, %.0f tok/s)",
			live.Concurrency, live.OutputTokensPerSec, p.Knee.Concurrency, p.Knee.OutputTokensPerSecond)
	}
	t.Logf("curve: %d points from concurrency %g to %g; knee %g in flight at %.0f tok/s; live %.1f in flight, %.0f tok/s, p99 TTFT %.3f s, p99 TPOT %.4f s",
		len(p.Points), p.Points[0].Concurrency, p.Points[len(p.Points)-1].Concurrency, p.Knee.Concurrency, p.Knee.OutputTokensPerSecond,
		live.Concurrency, live.OutputTokensPerSec, live.TTFTP99Seconds, live.TPOTP99Seconds)

	var buf bytes.Buffer
	title := fmt.Sprintf("Knee curve and operating point · replica %s · knee at concurrency %g", demoReplica, p.Knee.Concurrency)
	if err := sweep.WritePlotWith(&buf, p, "png", sweep.PlotExtras{Title: title, Live: live}); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("the knee panel's PNG does not decode: %v", err)
	}
	t.Logf("knee panel PNG: %dx%d, %d bytes", img.Bounds().Dx(), img.Bounds().Dy(), buf.Len())
	// What the on-call must be able to read off it: the knee, the SLOs, and
	// in each panel where the replica runs now, with that panel's value.
	// (The same drawing as SVG, whose text is searchable.)
	var svg bytes.Buffer
	if err := sweep.WritePlotWith(&svg, p, "svg", sweep.PlotExtras{Title: title, Live: live}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		title,
		fmt.Sprintf("knee: concurrency %g", p.Knee.Concurrency),
		"SLO: p99 TTFT ≤ " + p.SLO.TTFT.D().String(),
		"SLO: p99 TPOT ≤ " + p.SLO.TPOT.D().String(),
		fmt.Sprintf("%s now: %.0f in flight, %.0f tok/s", demoReplica, live.Concurrency, live.OutputTokensPerSec),
		fmt.Sprintf("%s now: %.0f in flight, p99 TTFT %.0f ms", demoReplica, live.Concurrency, live.TTFTP99Seconds*1e3),
		fmt.Sprintf("%s now: %.0f in flight, p99 TPOT %.0f ms", demoReplica, live.Concurrency, live.TPOTP99Seconds*1e3),
	} {
		if !bytes.Contains(svg.Bytes(), []byte(html.EscapeString(want))) && !bytes.Contains(svg.Bytes(), []byte(want)) {
			t.Errorf("the knee panel does not say %q", want)
		}
	}
	// The knee line (orange) and the live point (red) are drawn.
	colours := map[[3]uint32]string{{255, 127, 14}: "the knee's orange", {214, 39, 40}: "the live point's red"}
	seen := map[string]bool{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if name, ok := colours[[3]uint32{r >> 8, g >> 8, b >> 8}]; ok {
				seen[name] = true
			}
		}
	}
	for _, name := range colours {
		if !seen[name] {
			t.Errorf("no pixel of the PNG has %s", name)
		}
	}
	path := filepath.Join(t.TempDir(), "knee-panel.png")
	if *update {
		path = kneePNG
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
