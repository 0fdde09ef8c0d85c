package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// notification is one alert of an Alertmanager webhook call, with when the
// receiver got it.
type notification struct {
	Received    time.Time
	Status      string // firing or resolved
	Labels      map[string]string
	Annotations map[string]string
	// GroupLabels are the labels of the Alertmanager group the alert was
	// notified in (the route's group_by).
	GroupLabels map[string]string
	StartsAt    time.Time
	EndsAt      time.Time
}

// webhookPayload is the part of Alertmanager's webhook body (version 4)
// the test reads.
type webhookPayload struct {
	Version     string            `json:"version"`
	Status      string            `json:"status"`
	GroupLabels map[string]string `json:"groupLabels"`
	Alerts      []struct {
		Status      string            `json:"status"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		StartsAt    time.Time         `json:"startsAt"`
		EndsAt      time.Time         `json:"endsAt"`
	} `json:"alerts"`
}

// webhook is the pager: an HTTP receiver on 127.0.0.1 recording every
// alert Alertmanager notifies it of.
type webhook struct {
	srv *httptest.Server
	t   *testing.T

	mu  sync.Mutex
	got []notification
}

func newWebhook(t *testing.T) *webhook {
	w := &webhook{t: t}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *webhook) URL() string { return w.srv.URL + "/alerts" }

func (w *webhook) serve(rw http.ResponseWriter, r *http.Request) {
	received := time.Now()
	var p webhookPayload
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		w.t.Errorf("webhook: undecodable Alertmanager notification: %v", err)
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range p.Alerts {
		w.got = append(w.got, notification{
			Received: received, Status: a.Status, Labels: a.Labels, Annotations: a.Annotations,
			GroupLabels: p.GroupLabels, StartsAt: a.StartsAt, EndsAt: a.EndsAt,
		})
	}
}

// notifications returns every alert received so far, in order.
func (w *webhook) notifications() []notification {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]notification(nil), w.got...)
}

// first returns the first notification matching match, if any.
func (w *webhook) first(match func(notification) bool) (notification, bool) {
	for _, n := range w.notifications() {
		if match(n) {
			return n, true
		}
	}
	return notification{}, false
}
