package demo

import (
	"testing"

	"github.com/kneewatch/kneewatch/collector"
)

// TestDefaultSLOSitsOnVLLMBucketEdges: the demo's own SLO must not draw the
// warning kneewatch gives an SLO between bucket edges (attainment counted
// against the next edge up), or the demo's first screen tells the user to
// change the thresholds the demo chose.
func TestDefaultSLOSitsOnVLLMBucketEdges(t *testing.T) {
	var o Options
	o.defaults()
	if o.SLO.TTFT == 0 || o.SLO.TPOT == 0 {
		t.Fatalf("the default SLO has no thresholds: %+v", o.SLO)
	}
	for _, w := range collector.CheckSLOEdges("vllm", o.SLO) {
		t.Errorf("the demo's default SLO: %s", w)
	}
}
