// Package shard splits replicas between kneewatch instances as
// kube-state-metrics splits objects: every instance is told its shard and
// the total, hashes each replica's identity, and watches only the replicas
// that hash to it. Instances share no state; they agree because they hash
// the same way.
package shard

import (
	"fmt"
	"hash/fnv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kneewatch/kneewatch/catalog"
)

// Assignment is one instance's place among the shards. The zero value and
// any Total of 1 or less own every replica.
type Assignment struct {
	Shard, Total int
}

// New returns the assignment of shard out of total, or an error naming the
// bad value.
func New(shard, total int) (Assignment, error) {
	if total < 1 {
		return Assignment{}, fmt.Errorf("total shards must be at least 1, got %d", total)
	}
	if shard < 0 || shard >= total {
		return Assignment{}, fmt.Errorf("shard %d is not a shard of %d (want 0 to %d)", shard, total, total-1)
	}
	return Assignment{Shard: shard, Total: total}, nil
}

// Sharded reports whether replicas are split at all.
func (a Assignment) Sharded() bool { return a.Total > 1 }

// Owns reports whether this instance watches the replica with the given
// identity (its replica name: the configured name of a static target, the
// namespace/pod name of a discovered one).
func (a Assignment) Owns(identity string) bool {
	if !a.Sharded() {
		return true
	}
	return Of(identity, a.Total) == a.Shard
}

// Of returns the shard, 0 to total-1, that owns identity.
//
// It is a jump consistent hash (Lamping and Veach, 2014) of the identity's
// FNV-1a hash, not FNV modulo total as kube-state-metrics uses: when a
// shard joins or leaves, only about 1/total of the replicas change owner,
// and a replica that moves loses its rate window, so fewer moves mean
// fewer gaps in headroom while a StatefulSet scales.
func Of(identity string, total int) int {
	if total <= 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(identity)) // a hash.Hash never returns an error
	return jump(h.Sum64(), total)
}

// jump is the jump consistent hash of key into buckets buckets: a key
// moves, as buckets grows by one, only into the new bucket, with
// probability 1/buckets.
func jump(key uint64, buckets int) int {
	var b, j int64 = -1, 0
	for j < int64(buckets) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// Describe and Collect export the assignment, so a dashboard or an alert
// can tell the shards apart and check that none is missing: every
// instance exports kneewatch_shard_ordinal and kneewatch_shards.
func (a Assignment) Describe(ch chan<- *prometheus.Desc) {
	ch <- ordinalDesc
	ch <- countDesc
}

// Collect exports the assignment as two const gauges.
func (a Assignment) Collect(ch chan<- prometheus.Metric) {
	total := max(a.Total, 1)
	ch <- prometheus.MustNewConstMetric(ordinalDesc, prometheus.GaugeValue, float64(a.Shard))
	ch <- prometheus.MustNewConstMetric(countDesc, prometheus.GaugeValue, float64(total))
}

var (
	ordinalDesc = catalog.MetricShardOrdinal.Desc()
	countDesc   = catalog.MetricShardCount.Desc()
)
