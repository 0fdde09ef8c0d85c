package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// FleetConfig configures a fleet of simulated replicas, one HTTP listener
// each on consecutive ports, plus one DCGM endpoint for all their GPUs.
type FleetConfig struct {
	// Replicas is the number of replicas (0 means 1).
	Replicas int
	// Listen is replica 0's address; replica i listens on its port + i. With
	// port 0 every replica gets its own free port (for tests and the demo);
	// empty means "127.0.0.1:0".
	Listen string
	// DCGMListen is the DCGM endpoint's address; empty means none.
	DCGMListen string
	// Preset is every replica's model, GPU and scheduler limits.
	Preset Preset
	// Model overrides the served model name (default Preset.Model).
	Model string
	// Speed K divides every step cost by K (0 means 1).
	Speed float64
	// MetricsFlavor selects the /metrics names (see MetricsFlavors).
	MetricsFlavor string
	// Faults are applied at start (see ParseFaultFlag).
	Faults []FaultFlag
	// NamePrefix names replica i "<prefix>-<i>" (default "sim"); the name is
	// also the DCGM pod label.
	NamePrefix string
	// DCGM sets the DCGM endpoint's host and pod labels.
	DCGM DCGMLabels
	// ShutdownGrace is how long Close lets in-flight requests finish before
	// failing them (0 means 5 s).
	ShutdownGrace time.Duration
	// Logger receives the fleet's logs; nil discards them.
	Logger *slog.Logger
}

// FleetReplica is one running replica and where to reach it.
type FleetReplica struct {
	Name string
	// URL is the replica's base URL, e.g. "http://127.0.0.1:8100".
	URL string
	// OpenAIBaseURL is URL + "/v1", the base URL OpenAI clients take.
	OpenAIBaseURL string
	// MetricsURL is URL + "/metrics".
	MetricsURL string
	Replica    *Replica
}

// Fleet is a running set of replicas; Close stops it.
type Fleet struct {
	replicas []FleetReplica
	dcgmURL  string
	log      *slog.Logger
	grace    time.Duration

	servers       []*http.Server
	serving       sync.WaitGroup
	stopDrivers   context.CancelFunc
	drivers       sync.WaitGroup
	stopAfterFunc func() bool

	closeOnce sync.Once
	done      chan struct{}
}

// StartFleet starts the replicas' engines and HTTP servers (and the DCGM
// endpoint) and returns once all listen. The fleet stops when ctx is
// cancelled or Close is called.
func StartFleet(ctx context.Context, cfg FleetConfig) (*Fleet, error) {
	n := cfg.Replicas
	if n == 0 {
		n = 1
	}
	if n < 0 {
		return nil, fmt.Errorf("replicas must be ≥ 1, got %d", cfg.Replicas)
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	host, basePort, err := splitListen("listen address", cfg.Listen)
	if err != nil {
		return nil, err
	}
	if basePort != 0 && basePort+n-1 > 65535 {
		return nil, fmt.Errorf("listen %q: %d replicas need ports %d–%d, past 65535", cfg.Listen, n, basePort, basePort+n-1)
	}
	for _, f := range cfg.Faults {
		if f.Replica >= n {
			return nil, fmt.Errorf("fault %d:%s: there are only %d replicas (0–%d)", f.Replica, f.Key, n, n-1)
		}
	}
	prefix := cfg.NamePrefix
	if prefix == "" {
		prefix = "sim"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Fleet{log: log, grace: cfg.ShutdownGrace, done: make(chan struct{})}
	if f.grace <= 0 {
		f.grace = 5 * time.Second
	}

	replicas := make([]*Replica, n)
	for i := range replicas {
		faults, err := patchFor(cfg.Faults, i)
		if err != nil {
			return nil, err
		}
		replicas[i], err = NewReplica(ReplicaConfig{
			Name: fmt.Sprintf("%s-%d", prefix, i), Preset: cfg.Preset, ServedModel: cfg.Model,
			Speed: cfg.Speed, MetricsFlavor: cfg.MetricsFlavor, Faults: faults, Logger: log,
		})
		if err != nil {
			return nil, err
		}
	}

	var listeners []net.Listener
	closeAll := func() {
		for _, l := range listeners {
			l.Close()
		}
	}
	for i, r := range replicas {
		port := 0
		if basePort != 0 {
			port = basePort + i
		}
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("replica %s: listen on %s: %w", r.Name(), addr, err)
		}
		listeners = append(listeners, l)
		url := "http://" + l.Addr().String()
		f.replicas = append(f.replicas, FleetReplica{
			Name: r.Name(), URL: url, OpenAIBaseURL: url + "/v1", MetricsURL: url + "/metrics", Replica: r,
		})
		f.servers = append(f.servers, newHTTPServer(r.Handler(), log))
	}
	if cfg.DCGMListen != "" {
		if _, _, err := splitListen("DCGM listen address", cfg.DCGMListen); err != nil {
			closeAll()
			return nil, err
		}
		gpus := make([]DCGMGPU, n)
		for i, r := range replicas {
			gpus[i] = DCGMGPU{Replica: r}
		}
		h, err := NewDCGMHandler(cfg.DCGM, gpus)
		if err != nil {
			closeAll()
			return nil, err
		}
		l, err := net.Listen("tcp", cfg.DCGMListen)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("dcgm endpoint: listen on %s: %w", cfg.DCGMListen, err)
		}
		listeners = append(listeners, l)
		f.dcgmURL = "http://" + l.Addr().String() + "/metrics"
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", h)
		f.servers = append(f.servers, newHTTPServer(mux, log))
	}

	// Drivers outlive ctx by the shutdown grace, so in-flight requests can
	// finish; Close stops them.
	driverCtx, stop := context.WithCancel(context.Background())
	f.stopDrivers = stop
	for _, r := range replicas {
		f.drivers.Go(func() { r.Run(driverCtx) })
	}
	for i, srv := range f.servers {
		l := listeners[i]
		f.serving.Go(func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("server stopped", "addr", l.Addr().String(), "err", err)
			}
		})
	}
	f.stopAfterFunc = context.AfterFunc(ctx, func() { f.Close() })
	log.Info("simulated fleet started", "replicas", n, "preset", cfg.Preset.Name, "speed", cfg.Speed)
	return f, nil
}

func newHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// splitListen parses host:port with a numeric port.
func splitListen(what, addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%s %q: want host:port, e.g. 127.0.0.1:8100: %w", what, addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%s %q: port %q is not a number from 0 to 65535", what, addr, p)
	}
	return host, port, nil
}

// Replicas lists the replicas in index order.
func (f *Fleet) Replicas() []FleetReplica { return append([]FleetReplica(nil), f.replicas...) }

// DCGMURL is the DCGM endpoint's /metrics URL, or "" when there is none.
func (f *Fleet) DCGMURL() string { return f.dcgmURL }

// Done is closed when the fleet has stopped.
func (f *Fleet) Done() <-chan struct{} { return f.done }

// shutdown stops the servers accepting and waits up to d for their requests
// to finish; it reports whether they all did.
func (f *Fleet) shutdown(d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := true
	for _, srv := range f.servers {
		wg.Go(func() {
			if err := srv.Shutdown(ctx); err != nil {
				mu.Lock()
				ok = false
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ok
}

// Close stops the fleet gracefully: the servers stop accepting, in-flight
// requests get the shutdown grace to finish, then the engines stop (failing
// what is left) and every goroutine is waited for. It is safe to call more
// than once.
func (f *Fleet) Close() error {
	f.closeOnce.Do(func() {
		f.stopAfterFunc()
		if !f.shutdown(f.grace) {
			f.log.Warn("in-flight requests outlived the shutdown grace; failing them", "grace", f.grace)
		}
		// Stopping the engines fails what is left; give those handlers a
		// moment to send their error before the connections are cut.
		f.stopDrivers()
		f.drivers.Wait()
		f.shutdown(time.Second)
		for _, srv := range f.servers {
			srv.Close()
		}
		f.serving.Wait()
		f.log.Info("simulated fleet stopped")
		close(f.done)
	})
	<-f.done
	return nil
}
