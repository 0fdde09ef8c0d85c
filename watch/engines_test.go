package watch

import (
	"slices"
	"testing"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/config"
)

// TestTheConfigKnowsEveryEngineTheCollectorHasAnAdapterFor keeps the one
// engine list (collector's adapters) and the names the config file accepts
// in step: a new adapter the config rejected could never be chosen, and an
// engine the config accepted without an adapter would fail every scrape.
// The two packages cannot share the list itself (config must not import
// the scrape path), so this package, which maps one onto the other, checks.
func TestTheConfigKnowsEveryEngineTheCollectorHasAnAdapterFor(t *testing.T) {
	var known []string
	for _, e := range config.KnownEngines() {
		known = append(known, string(e))
	}
	slices.Sort(known)
	if adapters := collector.Engines(); !slices.Equal(known, adapters) {
		t.Errorf("config.KnownEngines() = %v, the collector's adapters are %v", known, adapters)
	}
}
