package sweep

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress shows a sweep's progress. Run calls StartLevel and EndLevel;
// Update is called by the level's workers, one at a time. With Poisson
// arrivals, Run then calls StartTrial and EndTrial around each open-loop
// trial, and the trial's dispatcher UpdateTrial.
type Progress interface {
	// StartLevel announces the index-th level (from 1) at concurrency c,
	// which completes after total requests (warm-up and window).
	StartLevel(index, c, total int)
	// Update reports done requests completed so far in the level.
	Update(done int)
	// EndLevel closes the level's display.
	EndLevel()
	// StartTrial announces the index-th open-loop trial (from 1) at rate
	// requests/s, which runs for length (warm-up and steady part).
	StartTrial(index int, rate float64, length time.Duration)
	// UpdateTrial reports the time since the trial started and the
	// requests in flight.
	UpdateTrial(elapsed time.Duration, inFlight int)
	// EndTrial closes the trial's display.
	EndTrial()
}

type noProgress struct{}

func (noProgress) StartLevel(int, int, int)               {}
func (noProgress) Update(int)                             {}
func (noProgress) EndLevel()                              {}
func (noProgress) StartTrial(int, float64, time.Duration) {}
func (noProgress) UpdateTrial(time.Duration, int)         {}
func (noProgress) EndTrial()                              {}

// NewProgress returns a progress bar with an ETA per level on w when w is
// a terminal, and otherwise a log line per level and one every interval
// while a level runs (plain lines suit CI logs and files).
func NewProgress(w io.Writer, terminal bool, log *slog.Logger, interval time.Duration) Progress {
	if terminal {
		return &barProgress{w: w}
	}
	return &logProgress{log: log, interval: interval, now: time.Now}
}

// barProgress draws one bar per level.
type barProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
	// trial is the open-loop trial's description, before its in-flight count.
	trial string
}

func (p *barProgress) StartLevel(index, c, total int) {
	p.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(fmt.Sprintf("level %d · concurrency %d", index, c)),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString("req"),
		progressbar.OptionShowIts(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}

func (p *barProgress) Update(done int) {
	if p.bar != nil {
		_ = p.bar.Set(done)
	}
}

// StartTrial draws a bar in seconds of the trial's length.
func (p *barProgress) StartTrial(index int, rate float64, length time.Duration) {
	p.trial = fmt.Sprintf("open-loop trial %d · %g req/s", index, rate)
	p.bar = progressbar.NewOptions(int(math.Ceil(length.Seconds())),
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(p.trial),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString("s"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}

func (p *barProgress) UpdateTrial(elapsed time.Duration, inFlight int) {
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("%s · %d in flight", p.trial, inFlight))
		_ = p.bar.Set(int(elapsed.Seconds()))
	}
}

func (p *barProgress) EndTrial() { p.EndLevel() }

func (p *barProgress) EndLevel() {
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Clear()
		p.bar = nil
	}
}

// logProgress logs a level's start and, every interval, how far it got and
// when it should end at the current pace.
type logProgress struct {
	log      *slog.Logger
	interval time.Duration
	now      func() time.Time

	mu                sync.Mutex
	c, total          int
	rate              float64
	length            time.Duration
	started, lastSaid time.Time
}

func (p *logProgress) StartLevel(index, c, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.c, p.total = c, total
	p.started = p.now()
	p.lastSaid = p.started
	p.log.Info("level started", "level", index, "concurrency", c, "requests", total)
}

func (p *logProgress) Update(done int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.interval <= 0 || now.Sub(p.lastSaid) < p.interval || done <= 0 {
		return
	}
	p.lastSaid = now
	elapsed := now.Sub(p.started)
	eta := time.Duration(float64(elapsed) * float64(p.total-done) / float64(done))
	p.log.Info("level progress", "concurrency", p.c, "done", done, "of", p.total, "eta", eta.Round(time.Second))
}

func (p *logProgress) EndLevel() {}

func (p *logProgress) StartTrial(index int, rate float64, length time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rate, p.length = rate, length
	p.started = p.now()
	p.lastSaid = p.started
	p.log.Info("open-loop trial started", "trial", index, "rate", rate, "length", length)
}

func (p *logProgress) UpdateTrial(elapsed time.Duration, inFlight int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.interval <= 0 || now.Sub(p.lastSaid) < p.interval {
		return
	}
	p.lastSaid = now
	p.log.Info("open-loop trial progress", "rate", p.rate, "in_flight", inFlight,
		"elapsed", elapsed.Round(time.Second), "eta", (p.length - elapsed).Round(time.Second))
}

func (p *logProgress) EndTrial() {}
