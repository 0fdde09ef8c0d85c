// Package watch is kneewatch's service core: the evaluation loop over every
// watched replica and the exporter of its latest results.
//
//   - targets.go maps the config file's `targets` and `profiles` to Targets
//     (discovery builds the same Targets from Kubernetes).
//   - watcher.go is the Watcher: every replica's turns (schedule.go, one
//     timer heap, turns in slots, run by warm workers, workers.go) and one
//     loop per DCGM endpoint (dcgm_source.go), each replica's
//     collector.Window, the evaluation of headroom by the knee package, and
//     an immutable Round of every replica's latest ReplicaEval.
//   - replay.go evaluates rounds from scrapes made elsewhere (recorded, or
//     a simulator's in virtual time): the same evaluation without the loops.
//   - exporter.go is the prometheus.Collector that turns the latest Round
//     into const metrics on kneewatch's own registry.
//
// Scraping, the engine adapters, snapshots and windows are package
// collector's; what a window and a profile mean for headroom is package
// knee's. This package only schedules them and publishes the result.
package watch
