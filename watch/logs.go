package watch

import (
	"log/slog"
	"sync"
	"time"
)

// logLimiter keeps repeated warnings from flooding the log: a failure is
// logged when it starts or changes, then at most once per repeat while it
// lasts, and its end is logged once. Hundreds of targets down for an hour
// log a line a minute each, not one per scrape.
type logLimiter struct {
	logger *slog.Logger
	repeat time.Duration
	now    func() time.Time

	mu   sync.Mutex
	last map[string]logged
}

type logged struct {
	detail string
	at     time.Time // last logged
	since  time.Time // the failure began
}

func newLogLimiter(logger *slog.Logger, repeat time.Duration) *logLimiter {
	return &logLimiter{logger: logger, repeat: repeat, now: time.Now, last: map[string]logged{}}
}

// failure reports the state of the failure named key: detail is its error
// text, or "" when it is not failing. args are extra log fields.
func (l *logLimiter) failure(key, msg, detail string, args ...any) {
	l.mu.Lock()
	prev, had := l.last[key]
	now := l.now()
	switch {
	case detail == "" && !had:
		l.mu.Unlock()
		return
	case detail == "":
		delete(l.last, key)
		l.mu.Unlock()
		l.logger.Info(msg+": recovered", append(args, "after", now.Sub(prev.since).Round(time.Second).String())...)
		return
	case had && prev.detail == detail && now.Sub(prev.at) < l.repeat:
		l.mu.Unlock()
		return
	}
	since := prev.since
	if !had {
		since = now
	}
	l.last[key] = logged{detail: detail, at: now, since: since}
	l.mu.Unlock()
	l.logger.Warn(msg, append(args, "err", capText(detail))...)
}

// every logs msg under key at most once per repeat.
func (l *logLimiter) every(key, msg string, args ...any) {
	l.mu.Lock()
	now := l.now()
	if prev, ok := l.last[key]; ok && now.Sub(prev.at) < l.repeat {
		l.mu.Unlock()
		return
	}
	l.last[key] = logged{at: now}
	l.mu.Unlock()
	l.logger.Warn(msg, args...)
}

// forget drops the keys starting with prefix (a target removed).
func (l *logLimiter) forget(prefix string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.last {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			delete(l.last, k)
		}
	}
}

// maxLogText bounds an upstream-derived text in a log line.
const maxLogText = 1024

// capText cuts s to maxLogText bytes for a log line.
func capText(s string) string {
	if len(s) <= maxLogText {
		return s
	}
	return s[:maxLogText] + "…(cut)"
}
