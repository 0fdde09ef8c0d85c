// Package probe sends low-rate synthetic streaming requests to each
// replica's OpenAI-compatible API, like blackbox_exporter for LLM serving:
// client-side time to first token (TTFT), time per output token (TPOT) and
// end-to-end time, with failures classified (connect, timeout, http_4xx,
// http_5xx, bad_stream, empty, redirect).
//
// A Runner schedules one probe per replica per interval (jittered), never
// more than one in flight, skips replicas the watcher sees past their knee
// or with a growing queue, and caps each replica's probe tokens at a share
// of its knee throughput. It exports the catalog's probe metric families as
// a prometheus.Collector and gives the watcher a per-replica Summary over
// the window (SLO attainment, success ratio, all-failing flag).
//
// The package does not import the watcher: the caller adapts its targets
// to Target and its latest evaluation to a StateFunc (see
// cmd/kneewatch/probe_wiring.go), so package watch can import this package
// to read Summary.
package probe
