// Package server is the watcher's HTTP surface: /metrics from kneewatch's own
// registry, /-/healthy, /-/ready (503 until the first evaluation),
// POST /-/reload, and a landing page, served through exporter-toolkit so --web.config.file gives
// TLS and basic auth exactly as in Prometheus's own exporters.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
)

// Options configure the HTTP surface.
type Options struct {
	// Registry holds every metric /metrics serves (never the default registry).
	Registry *prometheus.Registry
	// Ready returns nil once kneewatch is ready (the first evaluation has
	// completed, and discovery, when on, has listed the serving pods), else
	// why not; /-/ready answers 503 with that reason. Nil: always ready.
	Ready func() error
	// Version is shown on the landing page.
	Version string
	// Description is shown on the landing page.
	Description string
	// ExtraLinks are added to the landing page (e.g. the demo's simulator URLs).
	ExtraLinks []Link
	// Reload, when set, serves POST /-/reload, as Prometheus does: it
	// re-reads the config and answers 200, or 500 with the error (the
	// previous config keeps running).
	Reload func() error
	Logger *slog.Logger
}

// Handler returns the watcher's routes.
func Handler(o Options) (http.Handler, error) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{
		ErrorLog:          slog.NewLogLogger(o.Logger.Handler(), slog.LevelError),
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
		Registry:          o.Registry,
	}))
	mux.HandleFunc("GET /-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("kneewatch is healthy.\n"))
	})
	mux.HandleFunc("GET /-/ready", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if o.Ready != nil {
			if err := o.Ready(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte("kneewatch is not ready: " + err.Error() + "\n"))
				return
			}
		}
		_, _ = w.Write([]byte("kneewatch is ready.\n"))
	})
	if o.Reload != nil {
		mux.HandleFunc("POST /-/reload", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			if err := o.Reload(); err != nil {
				http.Error(w, "failed to reload config: "+err.Error(), http.StatusInternalServerError)
				return
			}
			_, _ = w.Write([]byte("config reloaded.\n"))
		})
	}
	links := append([]web.LandingLinks{
		{Address: "metrics", Text: "Metrics", Description: "headroom, goodput and knee metrics"},
		{Address: "-/healthy", Text: "Health"},
		{Address: "-/ready", Text: "Readiness", Description: "503 until the first evaluation and discovery's first list of pods"},
	}, o.ExtraLinks...)
	landing, err := web.NewLandingPage(web.LandingConfig{
		Name:        "kneewatch",
		Description: o.Description,
		Version:     o.Version,
		Links:       links,
		// No /debug/pprof handlers are served: do not link them.
		Profiling: "false",
	})
	if err != nil {
		return nil, err
	}
	mux.Handle("GET /{$}", landing)
	return mux, nil
}

// Connection timeouts of the HTTP server. A scrape of /metrics is read in
// well under a second; WriteTimeout leaves room for a slow Prometheus
// reading a large exposition.
const (
	ReadTimeout  = 30 * time.Second
	WriteTimeout = 60 * time.Second
	IdleTimeout  = 30 * time.Second
	// MaxIdleConns is how many idle keep-alive connections are kept: past
	// it, a new connection closes the oldest idle ones. An idle timeout
	// alone lets 300 clients that connect and wait hold 300 descriptors
	// for its whole length; with a file limit of 256 nothing else, not
	// even Prometheus's scrape, could connect.
	MaxIdleConns = 64
)

// idleLimiter closes the oldest idle connections when there are too many.
type idleLimiter struct {
	max  int
	mu   sync.Mutex
	idle map[net.Conn]time.Time // since when each idle connection is idle
}

func newIdleLimiter(max int) *idleLimiter {
	return &idleLimiter{max: max, idle: map[net.Conn]time.Time{}}
}

// track is an http.Server ConnState hook.
func (l *idleLimiter) track(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateIdle:
		l.idle[c] = time.Now()
		l.closeOldest(l.max)
	case http.StateNew:
		l.closeOldest(l.max - 1)
	default: // active, hijacked, closed
		delete(l.idle, c)
	}
}

// closeOldest closes idle connections, oldest first, until at most keep
// are left. l.mu must be held.
func (l *idleLimiter) closeOldest(keep int) {
	for len(l.idle) > max(keep, 0) {
		var oldest net.Conn
		var at time.Time
		for ic, since := range l.idle {
			if oldest == nil || since.Before(at) {
				oldest, at = ic, since
			}
		}
		delete(l.idle, oldest)
		_ = oldest.Close()
	}
}

// Serve serves h on l until ctx is done, then shuts down gracefully (in-flight
// scrapes get up to 5 s). webConfigFile may be empty (plain HTTP, no auth).
func Serve(ctx context.Context, l net.Listener, h http.Handler, webConfigFile string, logger *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// Bounds on every connection, so clients that open connections and
		// sit on them (hundreds of idle keep-alives, a slow reader) cannot
		// use up the process's file descriptors and starve /metrics.
		ReadTimeout:  ReadTimeout,
		WriteTimeout: WriteTimeout,
		IdleTimeout:  IdleTimeout,
		ErrorLog:     slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ConnState:    newIdleLimiter(MaxIdleConns).track,
	}
	flags := &web.FlagConfig{
		WebListenAddresses: &[]string{l.Addr().String()},
		WebSystemdSocket:   new(bool),
		WebConfigFile:      &webConfigFile,
	}
	done := make(chan error, 1)
	go func() { done <- web.Serve(l, srv, flags, logger) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Link is a landing-page link.
type Link = web.LandingLinks
