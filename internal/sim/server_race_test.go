//go:build race

package sim

// raceEnabled: the race detector slows the simulator's own work 5–10×, so
// tests that compare wall-clock timings against the engine's skip their
// precision checks.
const raceEnabled = true
