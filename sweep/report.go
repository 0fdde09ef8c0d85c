package sweep

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
)

// ReportInfo is what the report says about the run besides the levels.
type ReportInfo struct {
	Target   string // as the user gave it, credentials redacted
	Model    string
	Workload string // preset, mix file or trace
	SLO      knee.SLO
	// Files written, for the report's links (base names are enough when
	// the report sits beside them).
	ProfileFile, PlotFile string
}

// WriteReport writes a Markdown report of the sweep: what was measured,
// the knee and why the sweep stopped, one table row per level in
// concurrency order, and the caveats a reader needs (missing metrics,
// token counts that differed from the requests).
func WriteReport(w io.Writer, out *Outcome, info ReportInfo) error {
	var b bytes.Buffer
	q := measure.QuantileLabel(info.SLO.Quantile)
	fmt.Fprintf(&b, "# Knee sweep: %s\n\n", info.Model)
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| target | `%s` |\n", info.Target)
	fmt.Fprintf(&b, "| model | `%s` |\n", info.Model)
	if out.Target.Engine != "" || out.Target.GPU != "" {
		fmt.Fprintf(&b, "| engine, GPU | %s, %s |\n", cmp.Or(out.Target.Engine, "unknown"), cmp.Or(out.Target.GPU, "unknown"))
	}
	fmt.Fprintf(&b, "| workload | `%s` |\n", info.Workload)
	fmt.Fprintf(&b, "| SLO | %s TTFT ≤ %s and %s TPOT ≤ %s, errors ≤ %.0f%% |\n", q, info.SLO.TTFT, q, info.SLO.TPOT, 100*MaxErrorRate)
	fmt.Fprintf(&b, "| run | %s → %s (%s), %d levels |\n", out.Started.UTC().Format(time.RFC3339), out.Finished.UTC().Format(time.RFC3339),
		out.Finished.Sub(out.Started).Round(time.Second), len(out.Levels))
	fmt.Fprintf(&b, "| stopped | %s |\n", out.Reason)
	if len(out.Trials) > 0 {
		fmt.Fprintf(&b, "| open loop | %d Poisson trials; %s |\n", len(out.Trials), out.OpenLoopReason)
	}
	if p := out.Profile; p != nil {
		k := p.Knee
		if k.Arrivals == knee.ArrivalsPoisson {
			fmt.Fprintf(&b, "| **knee** (poisson) | **%g requests/s, %s in flight**: %.0f output tok/s, %.0f goodput tok/s, KV cache %.0f%%, limited by %s (closed-loop knee ≈ concurrency %s) |\n",
				k.RequestsPerSecond, formatConcurrency(k.Concurrency), k.OutputTokensPerSecond, k.GoodputTokensPerSecond, 100*k.KVCacheUsage, k.LimitingResource,
				formatConcurrency(k.ClosedLoopConcurrency))
		} else {
			fmt.Fprintf(&b, "| **knee** | **concurrency %s**: %.0f output tok/s, %.0f goodput tok/s, KV cache %.0f%%, limited by %s |\n",
				formatConcurrency(k.Concurrency), k.OutputTokensPerSecond, k.GoodputTokensPerSecond, 100*k.KVCacheUsage, k.LimitingResource)
		}
		if p.Metadata.Partial {
			fmt.Fprintf(&b, "| partial | yes: the knee is a lower bound (%s) |\n", out.Reason)
		}
	} else {
		fmt.Fprintf(&b, "| **knee** | none: no level met the SLO |\n")
	}
	if info.ProfileFile != "" {
		fmt.Fprintf(&b, "| profile | [%s](%s) |\n", info.ProfileFile, info.ProfileFile)
	}
	if info.PlotFile != "" {
		fmt.Fprintf(&b, "\n![latency and throughput against concurrency](%s)\n", info.PlotFile)
	}

	levels := slices.Clone(out.Levels)
	slices.SortFunc(levels, func(a, b Level) int { return cmp.Compare(a.Point.Concurrency, b.Point.Concurrency) })
	fmt.Fprintf(&b, "\n## Levels\n\n")
	fmt.Fprintf(&b, "Run order: %s. Latencies are measured by the client from the moment each request was sent; "+
		"TPOT = (E2E − TTFT) ÷ (output tokens − 1); token counts come from the responses' usage.\n\n", runOrder(out.Levels))
	fmt.Fprintf(&b, "| concurrency | requests | window | errors | output tok/s | goodput tok/s | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 | KV cache | running | waiting | preemptions/s | GPU util | SLO |\n")
	fmt.Fprintf(&b, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, lv := range levels {
		pt := lv.Point
		gpu := "–"
		if pt.GPUUtilization != nil {
			gpu = fmt.Sprintf("%.0f%%", 100**pt.GPUUtilization)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %.1f%% | %.1f | %.1f | %s | %s | %s | %s | %.1f%% | %.1f | %.1f | %.3f | %s | %s |\n",
			formatConcurrency(pt.Concurrency), pt.Requests, lv.Duration.Round(time.Millisecond), 100*pt.ErrorRate,
			pt.OutputTokensPerSecond, pt.GoodputTokensPerSecond,
			seconds(pt.TTFT.P50), seconds(pt.TTFT.P99), seconds(pt.TPOT.P50), seconds(pt.TPOT.P99),
			100*pt.KVCacheUsage, pt.Running, pt.Waiting, pt.PreemptionsPerSecond, gpu, verdict(lv, info.SLO))
	}

	writeOpenLoop(&b, out, info.SLO)
	writeModels(&b, out.Profile)

	if notes := reportNotes(out); len(notes) > 0 {
		fmt.Fprintf(&b, "\n## Notes\n\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeModels lists the knees the profile's mix and speed models were
// measured with, when it has them: what the extra searches found, so a
// reader sees a scaled mix that read high (a knee rate above a lighter
// mix's) or a speed that moved the knee more than in proportion.
func writeModels(b *bytes.Buffer, p *knee.Profile) {
	if p == nil {
		return
	}
	if m := p.MixModel; m != nil {
		fmt.Fprintf(b, "\n## Mix model\n\n")
		fmt.Fprintf(b, "The knee searched again at each mix (`--mix-scales`), its prompts and outputs scaled; the token means are those the server reported. "+
			"kneewatch moves the knee with the mix it observes by the model fitted to these knees: ln(knee) = ln(the profile's) + "+
			"a·ln(P/P₀) + b·ln(O/O₀) + the square and cross terms, P and O the mean prompt and output tokens.\n\n")
		fmt.Fprintf(b, "| prompts × | outputs × | mean prompt tokens | mean output tokens | knee in flight | knee requests/s |\n")
		fmt.Fprintf(b, "|---:|---:|---:|---:|---:|---:|\n")
		for _, pt := range m.Points {
			fmt.Fprintf(b, "| %g | %g | %.0f | %.0f | %s | %.4g |\n", pt.PromptScale, pt.OutputScale, pt.MeanPromptTokens, pt.MeanOutputTokens,
				formatConcurrency(pt.Concurrency), pt.RequestsPerSecond)
		}
		fmt.Fprintf(b, "\n| fitted | a (prompt) | b (output) | a² term | a·b term | b² term |\n|---|---:|---:|---:|---:|---:|\n")
		for _, row := range []struct {
			name string
			q    knee.LogQuadratic
		}{{"knee in flight", m.Concurrency}, {"knee requests/s", m.RequestsPerSecond}} {
			fmt.Fprintf(b, "| %s | %.3g | %.3g | %.3g | %.3g | %.3g |\n", row.name, row.q.Prompt, row.q.Output, row.q.PromptSquared, row.q.PromptOutput, row.q.OutputSquared)
		}
	}
	if m := p.SpeedModel; m != nil {
		fmt.Fprintf(b, "\n## Speed model\n\n")
		fmt.Fprintf(b, "The knee searched again under the SLO's thresholds × each speed (`--speed-model`): where it lies on a GPU that much slower.\n\n")
		fmt.Fprintf(b, "| speed | knee in flight | knee requests/s |\n|---:|---:|---:|\n")
		for _, pt := range m.Points {
			fmt.Fprintf(b, "| %g | %s | %.4g |\n", pt.Speed, formatConcurrency(pt.Concurrency), pt.RequestsPerSecond)
		}
	}
}

// SaveReport writes the report to path atomically.
func SaveReport(path string, out *Outcome, info ReportInfo) error {
	var b bytes.Buffer
	if err := WriteReport(&b, out, info); err != nil {
		return err
	}
	return WriteFileAtomic(path, b.Bytes())
}

func runOrder(levels []Level) string {
	parts := make([]string, len(levels))
	for i, lv := range levels {
		parts[i] = formatConcurrency(lv.Point.Concurrency)
	}
	return strings.Join(parts, ", ")
}

// seconds formats a latency in seconds for a table cell.
func seconds(s float64) string {
	d := time.Duration(s * 1e9)
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}

// verdict says whether a level met the SLO and, if not, what broke it.
func verdict(lv Level, slo knee.SLO) string {
	if lv.Point.MeetsSLO && lv.Stopped == measure.Screened {
		return "✓ met (screened)"
	}
	if lv.Point.MeetsSLO {
		return "✓ met"
	}
	q := measure.QuantileLabel(slo.Quantile)
	var why []string
	if lv.TTFTAtQuantile > slo.TTFT.Seconds() {
		why = append(why, fmt.Sprintf("%s TTFT %s", q, seconds(lv.TTFTAtQuantile)))
	}
	if lv.TPOTAtQuantile > slo.TPOT.Seconds() {
		why = append(why, fmt.Sprintf("%s TPOT %s", q, seconds(lv.TPOTAtQuantile)))
	}
	if lv.Point.ErrorRate > MaxErrorRate {
		why = append(why, fmt.Sprintf("%.1f%% errors", 100*lv.Point.ErrorRate))
	}
	if lv.Point.Requests == 0 {
		why = append(why, "no request completed")
	}
	if lv.Stopped == measure.Breaks {
		why = append(why, "stopped early")
	}
	return "✗ " + strings.Join(why, ", ")
}

func reportNotes(out *Outcome) []string {
	notes := slices.Clone(out.Target.Warnings)
	var mismatch, short, total int
	problems := map[string]bool{}
	for _, lv := range out.Levels {
		mismatch += lv.PromptMismatch
		short += lv.OutputShort
		total += lv.Point.Requests
		if lv.StoppedWhy != "" {
			notes = append(notes, fmt.Sprintf("concurrency %s: %s.", formatConcurrency(lv.Point.Concurrency), lv.StoppedWhy))
		}
		if lv.CutShort {
			notes = append(notes, fmt.Sprintf("concurrency %s: the level timeout ended it after %d requests, before its window filled", formatConcurrency(lv.Point.Concurrency), len(lv.Results)))
		}
		for _, p := range lv.MetricProblems {
			problems[p] = true
		}
	}
	if mismatch > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d requests reported a prompt length other than the one sized by the word rule: the server's tokenizer counts differently. The profile's mean token counts are the server's.", mismatch, total))
	}
	if short > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d requests returned fewer output tokens than max_tokens (the server stopped at end-of-sequence).", short, total))
	}
	for _, p := range slices.Sorted(maps.Keys(problems)) {
		notes = append(notes, "metrics: "+p)
	}
	for _, tr := range out.Trials {
		for _, p := range tr.MetricProblems {
			problems[p] = true
		}
	}
	if out.Interrupted {
		notes = append(notes, "The sweep was interrupted; the profile is marked partial.")
	}
	return notes
}
