package sim

import (
	"net/http"
	"time"
)

// Handler is the replica's HTTP API: the OpenAI-compatible endpoints,
// GET /health, GET /metrics and the /admin/faults endpoints.
func (r *Replica) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", r.handleCompletions)
	mux.HandleFunc("POST /v1/chat/completions", r.handleChatCompletions)
	mux.HandleFunc("GET /v1/models", r.handleModels)
	mux.HandleFunc("GET /health", r.handleHealth)
	mux.HandleFunc("GET /metrics", r.handleMetrics)
	mux.HandleFunc("GET /admin/faults", r.handleGetFaults)
	mux.HandleFunc("POST /admin/faults", r.handlePostFaults)
	mux.HandleFunc("DELETE /admin/faults", r.handleDeleteFaults)
	return mux
}

func (r *Replica) handleModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []modelCard{{
		ID: r.model, Object: "model", Created: time.Now().Unix(), OwnedBy: "kneewatch-sim",
		Root: r.model, MaxModelLen: r.preset.MaxModelLen,
	}}})
}

// handleHealth answers 200 with an empty body, like vLLM, or 503 under the
// unhealthy fault. A stalled engine still answers 200: vLLM's health check
// only notices a dead engine process, not a hung one.
func (r *Replica) handleHealth(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	unhealthy, closed := r.faults.unhealthy, r.closed
	r.mu.Unlock()
	if unhealthy || closed {
		http.Error(w, "unhealthy", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}
