package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// fleetConfig writes a config of n static vLLM targets, all served by
// metricsURL, and returns its path and the replica names.
func fleetConfig(t *testing.T, metricsURL string, n int) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	prof, err := os.ReadFile(filepath.Join(testtools.ModuleRoot(), "knee", "testdata", "valid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "llama.yaml"), prof, 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("global:\n  scrape_timeout: 150ms\nprofiles:\n  - name: llama\n    file: llama.yaml\ntargets:\n")
	var names []string
	for i := range n {
		name := fmt.Sprintf("vllm-%d", i)
		names = append(names, name)
		fmt.Fprintf(&b, "  - replica: %s\n    metrics_url: %s\n    profile: llama\n", name, metricsURL)
	}
	path := filepath.Join(dir, "kneewatch.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, names
}

var targetUpReplica = regexp.MustCompile(`kneewatch_target_up\{namespace="[^"]*",pod="[^"]*",replica="([^"]+)",source="engine"\}`)

// serveShard runs kneewatch serve as one shard until the test ends and
// returns its /metrics once every owned target has been scraped (the
// set of exported targets stops changing) and it has evaluated twice.
func serveShard(t *testing.T, config string, shard, total int) string {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config.file", config, "--web.listen-address", addr,
			"--evaluation.interval", "200ms", "--evaluation.window", "2s", "--log.level", "error",
			"--shard", fmt.Sprint(shard), "--total-shards", fmt.Sprint(total)}, io.Discard, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("shard %d: serve returned %v on shutdown", shard, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("shard %d: serve did not stop within 10 s", shard)
		}
	})
	// Each target has its own scrape loop, so a round can be evaluated
	// before every target's first scrape has landed (on a busy machine,
	// by seconds): wait until the evaluations have started and the set of
	// targets the shard exports has not changed for a second, five
	// evaluation intervals.
	deadline := time.Now().Add(15 * time.Second)
	var last string
	var stableSince time.Time
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body := string(b)
			if resp.StatusCode == 200 && evaluationsAtLeast(body, 2) {
				targets := fmt.Sprint(targetUpReplica.FindAllStringSubmatch(body, -1))
				if targets != last || stableSince.IsZero() {
					last, stableSince = targets, time.Now()
				} else if time.Since(stableSince) >= time.Second {
					return body
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("shard %d of %d: its watched targets did not settle within 15 s of starting", shard, total)
	return ""
}

var evaluationsTotal = regexp.MustCompile(`(?m)^kneewatch_evaluations_total (\d+)$`)

// evaluationsAtLeast reports whether a /metrics body counts at least n evaluations.
func evaluationsAtLeast(body string, n int) bool {
	m := evaluationsTotal.FindStringSubmatch(body)
	if m == nil {
		return false
	}
	var got int
	fmt.Sscan(m[1], &got)
	return got >= n
}

func TestTwoShardsSplitStaticTargetsWithNoOverlapAndNoGap(t *testing.T) {
	srv := vllmFixtureServer(t)
	config, names := fleetConfig(t, srv.URL+"/metrics", 10)
	var union []string
	for s := range 2 {
		body := serveShard(t, config, s, 2)
		var mine []string
		for _, m := range targetUpReplica.FindAllStringSubmatch(body, -1) {
			mine = append(mine, m[1])
		}
		if len(mine) == 0 || len(mine) == len(names) {
			t.Errorf("shard %d of 2 watches %d of %d replicas, want a strict share: %v", s, len(mine), len(names), mine)
		}
		for _, want := range []string{
			fmt.Sprintf("kneewatch_shard_ordinal %d\n", s),
			"kneewatch_shards 2\n",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("shard %d: /metrics lacks %q", s, want)
			}
		}
		union = append(union, mine...)
	}
	slices.Sort(union)
	if !slices.Equal(union, slices.Sorted(slices.Values(names))) {
		t.Errorf("the shards' replicas together are %v, want each of %v exactly once", union, names)
	}
}

func TestServeRefusesABadShardAtStart(t *testing.T) {
	srv := vllmFixtureServer(t)
	config, _ := fleetConfig(t, srv.URL+"/metrics", 1)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--shard", "2", "--total-shards", "2"}, "--shard: 2 is not a shard of 2 (want 0 to 1, from --total-shards)"},
		{[]string{"--total-shards", "0"}, "--total-shards: must be at least 1, got 0"},
		{[]string{"--shard", "one"}, `--shard: "one" is not a whole number`},
		{[]string{"--shard", "-1"}, "--shard: -1 is not a shard of 1 (want 0 to 0, from --total-shards / KNEEWATCH_TOTAL_SHARDS)"},
		{[]string{"--total-shards", "-2"}, "--total-shards: must be at least 1, got -2"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := run(ctx, append([]string{"serve", "--config.file", config, "--web.listen-address", freeAddr(t)}, c.args...), io.Discard, io.Discard)
		cancel()
		if err == nil || err.Error() != c.want {
			t.Errorf("serve %v: error %v, want %s", c.args, err, c.want)
		}
	}
}
