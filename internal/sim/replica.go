package sim

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ReplicaConfig configures one simulated serving replica.
type ReplicaConfig struct {
	// Name identifies the replica in logs and DCGM's pod label, e.g. "sim-0".
	Name string
	// Preset is the model, GPU and scheduler limits.
	Preset Preset
	// ServedModel is the model name clients must send and metrics carry;
	// empty means Preset.Model.
	ServedModel string
	// Speed K divides every step cost by K (0 means 1).
	Speed float64
	// MetricsFlavor selects the /metrics names: "vllm" (default), "vllm-v0",
	// "sglang" or "tgi".
	MetricsFlavor string
	// Faults are applied at start.
	Faults FaultPatch
	// Logger receives the replica's logs; nil discards them.
	Logger *slog.Logger
}

// Replica is one simulated serving replica: an Engine behind a mutex, driven
// in real time by Run, with an OpenAI-compatible HTTP API, /metrics and
// runtime faults (Handler).
type Replica struct {
	name, model string
	preset      Preset
	speed       float64
	flavor      string
	log         *slog.Logger

	// wake nudges the driver after a submit, a fault change or a restart.
	wake chan struct{}

	mu      sync.Mutex
	engine  *Engine
	gen     uint64 // engine generation; a restart bumps it
	streams map[*Request]*stream
	nextID  uint64
	reg     *prometheus.Registry
	rec     recorder
	faults  faultState
	act     activity
	lastEnd time.Time // end of the latest step, in wall time
	// continuous is true while the driver steps back to back (no idle or
	// stall since the latest step).
	continuous bool
	lastSubmit time.Time
	closed     bool
}

// stream is one request's link between the driver and its HTTP handler.
// Fields other than req and notify are guarded by Replica.mu.
type stream struct {
	req *Request
	// notify (capacity 1) tells the handler that produced, done or err changed.
	notify chan struct{}

	produced  int       // output tokens delivered so far
	done      bool      // no more tokens will come
	err       error     // set when the replica dropped the request
	admitted  bool      // first admission already recorded
	lastToken time.Time // when the latest token was produced, for ITL
}

func (s *stream) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// NewReplica validates cfg and returns a replica that is idle until Run.
func NewReplica(cfg ReplicaConfig) (*Replica, error) {
	if cfg.Name == "" {
		return nil, errors.New("replica: name must be set")
	}
	model := cfg.ServedModel
	if model == "" {
		model = cfg.Preset.Model
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Replica{
		name:    cfg.Name,
		model:   model,
		preset:  cfg.Preset,
		speed:   cfg.Speed,
		flavor:  cfg.MetricsFlavor,
		log:     log.With("replica", cfg.Name),
		wake:    make(chan struct{}, 1),
		streams: make(map[*Request]*stream),
		faults:  healthyFaults(),
	}
	r.act.started = time.Now()
	faults, err := r.faults.apply(cfg.Faults, time.Now())
	if err != nil {
		return nil, fmt.Errorf("replica %s: %w", cfg.Name, err)
	}
	r.faults = faults
	if err := r.resetLocked(); err != nil {
		return nil, fmt.Errorf("replica %s: %w", cfg.Name, err)
	}
	return r, nil
}

// resetLocked builds a fresh engine and metrics registry, as a process
// (re)start does.
func (r *Replica) resetLocked() error {
	eng, err := NewEngine(Config{Preset: r.preset, Speed: r.speed, Slowdown: r.faults.slowdown})
	if err != nil {
		return err
	}
	reg, rec, err := newRecorder(r.flavor, metricsInfo{model: r.model, preset: r.preset})
	if err != nil {
		return err
	}
	r.engine, r.reg, r.rec = eng, reg, rec
	r.gen++
	r.lastEnd, r.continuous = time.Time{}, false
	rec.state(eng.State())
	return nil
}

// Name is the replica's name.
func (r *Replica) Name() string { return r.name }

// Model is the served model name.
func (r *Replica) Model() string { return r.model }

// Preset is the replica's preset.
func (r *Replica) Preset() Preset { return r.preset }

// State is a snapshot of the engine's queues and KV cache.
func (r *Replica) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.engine.State()
}

func (r *Replica) nudge() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

var (
	errClosed        = errors.New("the replica is shutting down")
	errFaultInjected = errors.New("injected error (fault error_rate)")
)

// submit admits a request into the engine's waiting queue. It returns
// ErrTooLong for a request that can never fit.
func (r *Replica) submit(promptTokens, maxTokens int) (*stream, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errClosed
	}
	r.nextID++
	req := &Request{ID: r.nextID, PromptTokens: promptTokens, MaxTokens: maxTokens, Arrival: time.Now()}
	if err := r.engine.Submit(req); err != nil {
		return nil, err
	}
	r.lastSubmit = req.Arrival
	s := &stream{req: req, notify: make(chan struct{}, 1)}
	r.streams[req] = s
	r.rec.submitted(promptTokens, maxTokens)
	r.rec.state(r.engine.State())
	r.nudge()
	return s, nil
}

// poll returns what the driver has delivered to s so far.
func (r *Replica) poll(s *stream) (produced int, done bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.produced, s.done, s.err
}

// cancel aborts s's request in the engine (its client went away).
func (r *Replica) cancel(s *stream) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.streams[s.req]; !ok {
		return // finished, failed or already cancelled
	}
	delete(r.streams, s.req)
	if s.req.Done() {
		// Its last token is in a step still in flight; the driver records it.
		return
	}
	r.engine.Abort(s.req, time.Now())
	r.rec.finished(newFinishEvent(s.req))
	r.rec.state(r.engine.State())
}

// failAllLocked ends every in-flight request with err.
func (r *Replica) failAllLocked(err error) {
	for req, s := range r.streams {
		s.err, s.done = err, true
		s.signal()
		delete(r.streams, req)
	}
}

// injectedError reports whether the error_rate fault fails this request.
func (r *Replica) injectedError() (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.faults.nextError()
}

// Faults returns the active faults.
func (r *Replica) Faults() Faults {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.faults.public(time.Now())
}

// SetFaults applies p (see FaultPatch) and returns the resulting faults. A
// bad patch changes nothing and its error names the field.
func (r *Replica) SetFaults(p FaultPatch) (Faults, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	next, err := r.faults.apply(p, now)
	if err != nil {
		return r.faults.public(now), err
	}
	r.faults = next
	if err := r.engine.SetSlowdown(next.slowdown); err != nil {
		return r.faults.public(now), err // unreachable: apply validated it
	}
	if p.Restart {
		r.log.Info("restart fault: resetting engine and metrics", "in_flight", len(r.streams))
		r.failAllLocked(errRestarted)
		if err := r.resetLocked(); err != nil {
			return r.faults.public(now), err
		}
	}
	r.log.Info("faults changed", "faults", r.faults.public(now))
	r.nudge()
	return r.faults.public(now), nil
}

// ClearFaults removes every fault.
func (r *Replica) ClearFaults() Faults {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = healthyFaults()
	_ = r.engine.SetSlowdown(1)
	r.log.Info("faults cleared")
	r.nudge()
	return r.faults.public(time.Now())
}

// metricsView returns the current registry (a restart replaces it) and the
// metrics faults to apply when serving it.
func (r *Replica) metricsView() (prometheus.Gatherer, faultState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.faults
	return r.reg, f
}
