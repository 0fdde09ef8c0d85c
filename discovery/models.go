package discovery

import (
	"github.com/kneewatch/kneewatch/watch"
	"slices"
	"strings"
)

// ModelsFrom adapts the watcher's latest round (watch.Watcher.Latest)
// to Options.ModelOf: the model each replica's engine reported last.
func ModelsFrom(latest func() *watch.Round) func(replica string) string {
	return func(replica string) string {
		r := latest()
		if r == nil {
			return ""
		}
		// Round.Replicas is sorted by replica.
		i, ok := slices.BinarySearchFunc(r.Replicas, replica, func(e watch.ReplicaEval, name string) int {
			return strings.Compare(e.Replica, name)
		})
		if !ok {
			return ""
		}
		return r.Replicas[i].Model
	}
}
