// Package knee holds knee profiles (a replica's measured latency-throughput
// curve and its knee, written by `kneewatch sweep` and `kneewatch sim knee`)
// and the pure functions that turn a live operating point plus a profile into
// headroom, goodput and the limiting resource.
//
// # Profiles
//
// Load and Parse read schema v1 strictly and validate it; every error names
// the file, the line and the field ("profile.yaml: line 15: slo.quantile:
// must be in (0,1), got 1.5"). Save and Marshal write it back so that Parse
// returns an equal profile. FindFromPoints picks the knee from sweep points;
// CurveAt reads the measured curve at any load.
//
// # Inference
//
// Evaluate compares one replica's Observation with its profile and returns
// a Result: knee ratios per Dimension (each 1 at the knee), headroom = 1 −
// the largest, goodput, the limiting resource and leading indicators.
// SummarizeFleet and ReplicasNeeded size a model's fleet. None of these do
// I/O or read a clock, and Evaluate does not allocate.
//
// # Unknown values
//
// A value kneewatch could not measure or compute is NaN, in Observation and
// in Result alike, and Known tells the two apart. NaN keeps both structs
// plain float64s (no pointers, no allocations per evaluation), is what
// PromQL's own histogram_quantile and division give for "no data", and
// poisons any arithmetic that forgets to check instead of passing a made-up
// zero along. ±Inf is treated as unknown too: it is never a measurement.
// Because zero is a real measurement, build an Observation with
// NewObservation (every field unknown) and set what was measured. An
// exporter drops a series whose value is not Known.
package knee
