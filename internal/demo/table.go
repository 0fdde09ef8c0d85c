package demo

import (
	"fmt"
	"github.com/kneewatch/kneewatch/sweep"
	"github.com/kneewatch/kneewatch/watch"
	"io"
	"math"
	"sync/atomic"
	"text/tabwriter"
)

type errorCount struct{ n atomic.Int64 }

func (e *errorCount) observe(r sweep.Result) {
	if r.Err != nil {
		e.n.Add(1)
	}
}

// WriteTable writes the live table: one row per replica with its load, the
// knee, the headroom kneewatch infers beside the ground truth, p99 TTFT and
// goodput.
func (f *Fleet) WriteTable(w io.Writer, r *watch.Round) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "replica\tload\tin-flight\tknee\theadroom\ttrue\tp99 TTFT\tgoodput tok/s\tstatus\t")
	byName := map[string]*watch.ReplicaEval{}
	if r != nil {
		for i := range r.Replicas {
			byName[r.Replicas[i].Replica] = &r.Replicas[i]
		}
	}
	for _, rep := range f.Replicas {
		e := byName[rep.Name]
		inflight, headroom, ttft, goodput, status := math.NaN(), math.NaN(), math.NaN(), math.NaN(), "waiting"
		if e != nil {
			inflight = e.Observation.Load()
			ttft = e.Observation.TTFT.P99
			status = "ok"
			if e.Result.OK {
				headroom = e.Result.Headroom
				goodput = e.Result.GoodputTokensPerSecond
			} else {
				status = e.Result.Reason
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%s\t%+.2f\t%s\t%s\t%s\t\n", rep.Name, rep.Load.Name, num(inflight, "%.1f"),
			f.Profile.Knee.Concurrency, num(headroom, "%+.2f"), rep.TrueHeadroom, ms(ttft), num(goodput, "%.0f"), status)
	}
	return tw.Flush()
}

func num(v float64, format string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

func ms(seconds float64) string {
	if math.IsNaN(seconds) || math.IsInf(seconds, 0) {
		return "-"
	}
	return fmt.Sprintf("%.0f ms", seconds*1000)
}
