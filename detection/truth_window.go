package detection

import (
	"slices"
	"sort"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// truthQuantile is the ground truth's windowed percentile: the Q-quantile
// of the events in (at − Width, at], or of the last knee.MinWindowRequests
// events when the window holds fewer, however far back they reach. Unlike
// knee.WindowedQuantile it has no cap on that stretch: at a low request
// rate (a long-context replica at a third of its knee finishes a request
// every ten seconds or more) a 10-minute cap left whole stretches of a run
// unjudged, counted as "not breached". The truth judges every moment; it is
// unknown only until the run has produced enough requests at all. Events
// must be in time order; not safe for concurrent use.
type truthQuantile struct {
	events []knee.LatencyEvent
	width  time.Duration
	q      float64
	buf    []float64
}

// at is the windowed quantile at the given moment, or unknown.
func (w *truthQuantile) at(at time.Time) float64 {
	from := at.Add(-w.width)
	lo := sort.Search(len(w.events), func(i int) bool { return w.events[i].At.After(from) })
	hi := sort.Search(len(w.events), func(i int) bool { return w.events[i].At.After(at) })
	if hi-lo < knee.MinWindowRequests {
		lo = hi - knee.MinWindowRequests
		if lo < 0 {
			return knee.Unknown()
		}
	}
	w.buf = w.buf[:0]
	for _, e := range w.events[lo:hi] {
		w.buf = append(w.buf, e.Seconds)
	}
	slices.Sort(w.buf)
	return knee.SampleQuantile(w.buf, w.q)
}
