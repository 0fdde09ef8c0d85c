// Package detection is the detection-quality bench, part of the lab (never
// imported by the product): does kneewatch page before a replica's latency
// SLO breaks, and stay quiet when it won't, better than the signals teams
// alert on today?
//
// It owns the scenarios (Scenarios, the seven scripted regressions, and
// GenerateSuite, a generated suite split into a tune and a test half), their
// ground truth from the simulator (TruthPoint: true load, knee, headroom and
// SLO breaches, in virtual time), the detectors scored (Detectors: the
// shipped rules as rules.Generate writes them, the baselines, and an oracle
// that runs the shipped page on the true headroom), and the scoring and the
// Markdown report behind docs/benchmarks/detection.md.
//
// Run simulates each scenario on the simulator's engine core, feeds every
// scrape through kneewatch's real adapters, window, knee evaluation and
// exporter (see pipeline.go), stores the series as Prometheus would, and
// evaluates every detector's alerting rules over them with Prometheus's
// PromQL engine, then scores the firings against the truth. `make
// bench-detection` (cmd/kneewatch-bench) runs it.
package detection
