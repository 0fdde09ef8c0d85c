// Package e2e holds kneewatch's end-to-end tests: the generated rules
// running in a real Prometheus against a real `kneewatch serve` watching a
// simulated fleet, paging through a real Alertmanager, and the ruler
// group's PromQL agreeing with the Go inference on identical series. It has
// no code of its own outside its tests.
package e2e
