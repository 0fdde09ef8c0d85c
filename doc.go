// Package kneewatch is the root of kneewatch's module; it holds no code.
// docs/architecture.md is the map: which package does what, the data flow
// from a scrape to a page, and where to change what.
//
// The product (what `kneewatch serve`, `rules`, `dashboards` and `sweep`
// run) is the top-level packages; the lab (the simulator, the detection
// bench and the demo) lives under internal/ and is linked only by the
// lab's subcommands. layout_test.go keeps the product from importing it.
package kneewatch
