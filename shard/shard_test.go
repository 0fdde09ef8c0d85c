package shard

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fleet returns n replica names shaped like the ones kneewatch shards:
// discovered namespace/pod names and static names.
func fleet(n int) []string {
	out := make([]string, 0, n)
	for i := range n {
		switch i % 3 {
		case 0:
			out = append(out, fmt.Sprintf("serving/vllm-llama-%d", i))
		case 1:
			out = append(out, fmt.Sprintf("team-%d/sglang-qwen-7c9f-%05d", i%17, i))
		default:
			out = append(out, fmt.Sprintf("tgi-%d", i))
		}
	}
	return out
}

func TestEveryReplicaLandsInExactlyOneShard(t *testing.T) {
	names := fleet(5000)
	for total := 1; total <= 16; total++ {
		shards := make([]Assignment, total)
		for s := range total {
			a, err := New(s, total)
			if err != nil {
				t.Fatal(err)
			}
			shards[s] = a
		}
		perShard := make([]int, total)
		for _, name := range names {
			owners := 0
			for s, a := range shards {
				if a.Owns(name) {
					owners++
					perShard[s]++
				}
			}
			if owners != 1 {
				t.Fatalf("total %d: %q is owned by %d shards, want exactly 1", total, name, owners)
			}
		}
		// Balanced enough that no shard carries far more than its share:
		// within 20% of len/total for 5,000 names (a fair hash is within
		// about 3 standard deviations, under 8% at 16 shards).
		mean := float64(len(names)) / float64(total)
		for s, n := range perShard {
			if float64(n) < 0.8*mean || float64(n) > 1.2*mean {
				t.Errorf("total %d: shard %d owns %d replicas, want within 20%% of %.0f", total, s, n, mean)
			}
		}
	}
}

func TestAShardJoiningMovesReplicasOnlyToIt(t *testing.T) {
	names := fleet(5000)
	for total := 1; total < 12; total++ {
		moved := 0
		for _, name := range names {
			before, after := Of(name, total), Of(name, total+1)
			if before != after {
				moved++
				if after != total {
					t.Fatalf("%d→%d shards: %q moved from shard %d to %d, want only moves to the new shard %d", total, total+1, name, before, after, total)
				}
			}
		}
		// About 1/(total+1) of the replicas move; modulo hashing would
		// move about total/(total+1) of them.
		want := float64(len(names)) / float64(total+1)
		if float64(moved) < 0.8*want || float64(moved) > 1.2*want {
			t.Errorf("%d→%d shards: %d replicas moved, want about %.0f", total, total+1, moved, want)
		}
	}
}

func TestTheHashIsStableAcrossReleases(t *testing.T) {
	// Instances of different versions must agree during a rolling update:
	// a change to the hash would split a fleet between two opinions. The
	// values were computed independently (FNV-1a and the paper's jump hash,
	// written in Python).
	for _, c := range []struct {
		name  string
		total int
		want  int
	}{
		{"vllm-0", 2, 0}, {"vllm-1", 2, 0}, {"serving/vllm-llama-0", 3, 1}, {"serving/vllm-llama-1", 3, 2},
		{"serving/vllm-llama-2", 3, 2},
	} {
		if got := Of(c.name, c.total); got != c.want {
			t.Errorf("Of(%q, %d) = %d, want %d", c.name, c.total, got, c.want)
		}
	}
}

func TestNewRefusesImpossibleAssignments(t *testing.T) {
	for _, c := range []struct {
		shard, total int
		want         string
	}{
		{0, 0, "total shards must be at least 1, got 0"},
		{2, 2, "shard 2 is not a shard of 2 (want 0 to 1)"},
		{-1, 3, "shard -1 is not a shard of 3 (want 0 to 2)"},
	} {
		if _, err := New(c.shard, c.total); err == nil || err.Error() != c.want {
			t.Errorf("New(%d, %d) error = %v, want %s", c.shard, c.total, err, c.want)
		}
	}
	var zero Assignment
	if !zero.Owns("anything") || zero.Sharded() {
		t.Error("the zero Assignment must own every replica and not be sharded")
	}
}

func TestTheAssignmentIsExported(t *testing.T) {
	a, err := New(2, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := `
# HELP kneewatch_shards How many kneewatch instances split the replicas (--total-shards); 1 when not sharded.
# TYPE kneewatch_shards gauge
kneewatch_shards 5
# HELP kneewatch_shard_ordinal This instance's shard (--shard), 0 to kneewatch_shards - 1; it watches only the replicas whose name hashes to it.
# TYPE kneewatch_shard_ordinal gauge
kneewatch_shard_ordinal 2
`
	if err := testutil.CollectAndCompare(a, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestJumpMatchesThePublishedAlgorithm(t *testing.T) {
	// Values of the reference implementation in Lamping and Veach's paper.
	for _, c := range []struct {
		key     uint64
		buckets int
		want    int
	}{
		{1, 1, 0}, {42, 57, 43}, {0xDEAD10CC, 1, 0}, {0xDEAD10CC, 666, 361}, {256, 1024, 520},
	} {
		if got := jump(c.key, c.buckets); got != c.want {
			t.Errorf("jump(%#x, %d) = %d, want %d", c.key, c.buckets, got, c.want)
		}
	}
}
