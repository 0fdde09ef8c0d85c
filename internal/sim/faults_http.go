package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// GET /admin/faults returns the active faults as JSON (see Faults).
func (r *Replica) handleGetFaults(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, r.Faults())
}

// POST /admin/faults applies a FaultPatch: each key present replaces that
// fault, absent keys stay; {"restart": true} restarts the replica. Unknown
// keys and bad values are 400 and change nothing.
func (r *Replica) handlePostFaults(w http.ResponseWriter, req *http.Request) {
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, 1<<20))
	dec.DisallowUnknownFields()
	var p FaultPatch
	if err := dec.Decode(&p); err != nil {
		msg := "invalid faults JSON: " + err.Error()
		if strings.Contains(err.Error(), "unknown field") {
			msg = fmt.Sprintf("%s (known: %s)", msg, strings.Join(FaultKeys(), ", "))
		}
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": msg})
		return
	}
	faults, err := r.SetFaults(p)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, faults)
}

// DELETE /admin/faults clears every fault.
func (r *Replica) handleDeleteFaults(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, r.ClearFaults())
}
