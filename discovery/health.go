package discovery

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The roles of discovery's informers, as the role label of its health
// metrics.
const (
	roleServing = "serving"       // the serving pods of the watched namespaces
	roleDCGM    = "dcgm_exporter" // the dcgm-exporter pods
)

// The kinds of failed calls to the API server, as the kind label of
// kneewatch_discovery_errors_total.
const (
	kindForbidden    = "forbidden"    // RBAC denies the list or watch
	kindUnauthorized = "unauthorized" // the credentials were refused
	kindUnavailable  = "unavailable"  // no answer: down, restarting, overloaded, network
	kindOther        = "other"        // any other error the API server answered
)

var errorKinds = []string{kindForbidden, kindUnauthorized, kindUnavailable, kindOther}

// errorKind classifies an error of a list or watch call; "" means it is
// not a failure of discovery: the watch's resource version expired (the
// informer lists again) or the call was cancelled.
func errorKind(err error) string {
	switch {
	case err == nil, errors.Is(err, context.Canceled),
		apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		return ""
	case apierrors.IsForbidden(err):
		return kindForbidden
	case apierrors.IsUnauthorized(err):
		return kindUnauthorized
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		// No answer from the API server at all: refused, reset, EOF,
		// timeout, DNS.
		return kindUnavailable
	}
	switch code := status.Status().Code; {
	case code == http.StatusTooManyRequests, code >= 500:
		return kindUnavailable
	}
	return kindOther
}

// instrument makes one list or watch call of src, records its outcome in
// the health tracker, and retries it while the API server does not answer.
//
// client-go's informers retry a failed call themselves, but with a
// backoff that grows to 30 s (up to 60 s with its jitter), so discovery
// stayed stale for a minute or more after the API server came back.
// Retrying an unanswered call here, from 250 ms doubling up to RetryMax,
// keeps it current within about RetryMax. Refusals (forbidden,
// unauthorized) are left to client-go's slower backoff: they do not fix
// themselves within seconds.
func instrument[T any](ctx context.Context, d *Discoverer, src *source, call func() (T, error)) (T, error) {
	wait := 250 * time.Millisecond
	for {
		v, err := call()
		if ctx.Err() != nil {
			return v, err // stopping: neither a success nor a failure
		}
		kind := errorKind(err)
		switch {
		case err == nil:
			d.health.succeeded(src)
			return v, nil
		case kind == "":
			return v, err
		}
		d.health.failed(src, kind, err)
		if kind != kindUnavailable {
			return v, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
		wait = min(2*wait, d.opts.RetryMax)
	}
}

// health tracks each informer's calls to the API server, for the
// discovery metrics and for logs that say when something changes (never
// every retry).
type health struct {
	logger *slog.Logger
	now    func() time.Time

	mu      sync.Mutex
	sources []*source
	state   map[*source]*sourceState
	errors  map[string]map[string]float64 // role → kind → count
}

type sourceState struct {
	failing      string    // kind of the failure of the last call; "" when it succeeded
	failingSince time.Time // when failing became non-empty
	lastErr      string
	lastOK       time.Time // last successful call or watch event
}

func newHealth(logger *slog.Logger, now func() time.Time) *health {
	return &health{logger: logger, now: now, state: map[*source]*sourceState{}, errors: map[string]map[string]float64{}}
}

func (h *health) add(src *source) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sources = append(h.sources, src)
	h.state[src] = &sourceState{}
	if h.errors[src.role] == nil {
		h.errors[src.role] = map[string]float64{}
		for _, k := range errorKinds {
			h.errors[src.role][k] = 0 // exported from the start, so rate() sees the first error
		}
	}
}

// succeeded records a successful list or watch call of src.
func (h *health) succeeded(src *source) {
	h.mu.Lock()
	st := h.state[src]
	st.lastOK = h.now()
	was, since := st.failing, st.failingSince
	st.failing, st.lastErr = "", ""
	h.mu.Unlock()
	if was != "" {
		h.logger.Info("kubernetes discovery reaches the API server again", "role", src.role,
			"namespace", namespaceName(src.namespace), "failed_for", st.lastOK.Sub(since).Round(time.Millisecond), "was", was)
	}
}

// event records a watch event of src: the watch is alive.
func (h *health) event(src *source) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := h.state[src]; st.failing == "" {
		st.lastOK = h.now()
	}
}

// failed records a failed call of src, logging when the kind of failure
// changes.
func (h *health) failed(src *source, kind string, err error) {
	h.mu.Lock()
	st := h.state[src]
	h.errors[src.role][kind]++
	changed := st.failing != kind
	if st.failing == "" {
		st.failingSince = h.now()
	}
	st.failing, st.lastErr = kind, err.Error()
	h.mu.Unlock()
	if !changed {
		return
	}
	ns := namespaceName(src.namespace)
	switch src.role {
	case roleDCGM:
		h.logger.Warn("kubernetes discovery cannot list or watch the dcgm-exporter pods: replicas are evaluated without their GPU metrics until it can"+hint(kind),
			"namespace", ns, "kind", kind, "err", err)
	default:
		h.logger.Warn("kubernetes discovery cannot list or watch the serving pods: the replicas are not updated until it can"+hint(kind),
			"namespace", ns, "kind", kind, "err", err)
	}
}

func hint(kind string) string {
	if kind == kindForbidden {
		return " (kneewatch needs get, list and watch on pods in that namespace)"
	}
	return ""
}

// lastError is src's last error, or "".
func (h *health) lastError(src *source) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state[src].lastErr
}

// roleHealth is the health of one role's informers together.
type roleHealth struct {
	role   string
	synced bool      // every informer has listed, and its last call succeeded
	lastOK time.Time // the latest success of any of them
	errors map[string]float64
}

func (h *health) roles() []roleHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []roleHealth
	idx := map[string]int{}
	for _, src := range h.sources {
		i, ok := idx[src.role]
		if !ok {
			i = len(out)
			idx[src.role] = i
			out = append(out, roleHealth{role: src.role, synced: true, errors: maps.Clone(h.errors[src.role])})
		}
		st := h.state[src]
		r := &out[i]
		r.synced = r.synced && st.failing == "" && src.informer.HasSynced()
		if st.lastOK.After(r.lastOK) {
			r.lastOK = st.lastOK
		}
	}
	slices.SortFunc(out, func(a, b roleHealth) int { return strings.Compare(a.role, b.role) })
	return out
}
