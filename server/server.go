// Package server is the watcher's HTTP surface: /metrics from kneewatch's own
// registry, /-/healthy, /-/ready (503 until the first evaluation), and a
// landing page, served through exporter-toolkit so --web.config.file gives
// TLS and basic auth exactly as in Prometheus's own exporters.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
)

// Options configure the HTTP surface.
type Options struct {
	// Registry holds every metric /metrics serves (never the default registry).
	Registry *prometheus.Registry
	// Ready reports whether the first evaluation has completed.
	Ready func() bool
	// Version is shown on the landing page.
	Version string
	// Description is shown on the landing page.
	Description string
	// ExtraLinks are added to the landing page (e.g. the demo's simulator URLs).
	ExtraLinks []Link
	Logger     *slog.Logger
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
		if o.Ready != nil && !o.Ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("kneewatch is not ready: no evaluation has completed yet.\n"))
			return
		}
		_, _ = w.Write([]byte("kneewatch is ready.\n"))
	})
	links := append([]web.LandingLinks{
		{Address: "metrics", Text: "Metrics", Description: "headroom, goodput and knee metrics"},
		{Address: "-/healthy", Text: "Health"},
		{Address: "-/ready", Text: "Readiness", Description: "503 until the first evaluation"},
	}, o.ExtraLinks...)
	landing, err := web.NewLandingPage(web.LandingConfig{
		Name:        "kneewatch",
		Description: o.Description,
		Version:     o.Version,
		Links:       links,
	})
	if err != nil {
		return nil, err
	}
	mux.Handle("GET /{$}", landing)
	return mux, nil
}

// Serve serves h on l until ctx is done, then shuts down gracefully (in-flight
// scrapes get up to 5 s). webConfigFile may be empty (plain HTTP, no auth).
func Serve(ctx context.Context, l net.Listener, h http.Handler, webConfigFile string, logger *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
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
