package discovery

import (
	"slices"
	"strings"

	"github.com/kneewatch/kneewatch/collector"
)

// ModelsFrom adapts the watcher's latest round (collector.Watcher.Latest)
// to Options.ModelOf: the model each replica's engine reported last.
func ModelsFrom(latest func() *collector.Round) func(replica string) string {
	return func(replica string) string {
		r := latest()
		if r == nil {
			return ""
		}
		// Round.Replicas is sorted by replica.
		i, ok := slices.BinarySearchFunc(r.Replicas, replica, func(e collector.ReplicaEval, name string) int {
			return strings.Compare(e.Replica, name)
		})
		if !ok {
			return ""
		}
		return r.Replicas[i].Model
	}
}
