package tests

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kneewatch/kneewatch/internal/promstore"
	"github.com/kneewatch/kneewatch/internal/testtools"
	"github.com/kneewatch/kneewatch/rules"
	"github.com/kneewatch/kneewatch/shard"
)

// kneewatchProcess is one `kneewatch serve` shard run as a process, as a
// StatefulSet pod runs it, discovering pods through the test cluster's
// API server.
type kneewatchProcess struct {
	shard, total int
	addr         string
	cmd          *exec.Cmd
	log          *bytes.Buffer
	done         chan struct{}
	started      time.Time
}

// startShard runs kneewatch serve with the flags the chart's StatefulSet
// gives pod `shard` of `total` (--total-shards from replicaCount, --shard
// from the pod's ordinal).
func startShard(t *testing.T, bin, config string, shard, total int) *kneewatchProcess {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p := &kneewatchProcess{shard: shard, total: total, addr: addr, log: &bytes.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, "serve", "--config.file", config, "--web.listen-address", addr,
		"--evaluation.interval", "250ms", "--evaluation.window", "3s", "--log.level", "warn",
		"--shard", fmt.Sprint(shard), "--total-shards", fmt.Sprint(total))
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.stop)
	return p
}

// stop ends the process this test started, by its PID, and waits for it.
func (p *kneewatchProcess) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *kneewatchProcess) name() string { return fmt.Sprintf("shard %d of %d", p.shard, p.total) }

// scrape returns the shard's /metrics, parsed, or nil if it does not answer.
func (p *kneewatchProcess) scrape() map[string]*dto.MetricFamily {
	resp, err := http.Get("http://" + p.addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil
	}
	return fams
}

// seriesReplicas is the sorted replica label values of one family.
func seriesReplicas(fams map[string]*dto.MetricFamily, family string) []string {
	var out []string
	for _, m := range fams[family].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "replica" && !slices.Contains(out, l.GetValue()) {
				out = append(out, l.GetValue())
			}
		}
	}
	sort.Strings(out)
	return out
}

// waitForShare waits until the shard watches exactly want (its
// kneewatch_target_up replicas) and has a headroom for each, and returns
// its /metrics then. It fails the test as soon as the shard exports a
// replica it does not own: a shard must never overlap, not even while it
// starts.
func (p *kneewatchProcess) waitForShare(t *testing.T, want []string, deadline time.Duration) map[string]*dto.MetricFamily {
	t.Helper()
	end := time.Now().Add(deadline)
	var last []string
	for time.Now().Before(end) {
		select {
		case <-p.done:
			t.Fatalf("%s exited: %s", p.name(), p.log)
		default:
		}
		if fams := p.scrape(); fams != nil {
			up := seriesReplicas(fams, "kneewatch_target_up")
			for _, r := range up {
				if !slices.Contains(want, r) {
					t.Fatalf("%s exports %s, which is not its share %v", p.name(), r, want)
				}
			}
			last = up
			if cmp.Equal(up, want) && cmp.Equal(seriesReplicas(fams, "kneewatch_replica_headroom_ratio"), want) {
				return fams
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: after %s watches %v, want %v\n%s", p.name(), deadline, last, want, p.log)
	return nil
}

// share is what shard owns of replicas, by the same hash kneewatch uses.
func share(replicas []string, s, total int) []string {
	var out []string
	for _, r := range replicas {
		if shard.Of(r, total) == s {
			out = append(out, r)
		}
	}
	return out
}

// TestShardsSplitDiscoveredReplicas runs kneewatch serve shards as
// processes against the real API server, discovering ten serving pods:
// two shards split them with no overlap and no gap; a third shard joining
// (the StatefulSet scaled to 3, so every pod restarts with
// --total-shards=3) and one leaving (back to 2) rebalance on each shard's
// first discovery list, with no transient overlap; a pod that appears
// while sharded is watched by exactly its owner; and the fleet recording
// rules evaluated by Prometheus's engine over the union of the shards'
// series equal those over a single unsharded instance's.
func TestShardsSplitDiscoveredReplicas(t *testing.T) {
	c := sharedCluster(t)
	const ns = "llm-shard"
	c.createNamespaces(t, ns)
	ctx := context.Background()
	if _, err := c.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port := engine(t)
	pods := c.client.CoreV1().Pods(ns)
	addPod := func(name string) string {
		p := servingPod(ns, name, port, map[string]string{"kneewatch.dev/profile": "llama"})
		p, err := pods.Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Every pod's metrics are the one engine on 127.0.0.1: the replicas
		// differ by identity (namespace/pod), which is what is sharded.
		setRunning(t, c.client, p, "127.0.0.1")
		return ns + "/" + name
	}
	var replicas []string
	for i := range 10 {
		replicas = append(replicas, addPod(fmt.Sprintf("vllm-%d", i)))
	}
	sort.Strings(replicas)
	config := shardConfig(t, c.kubeconfig, ns)
	bin := kneewatchBinary(t)

	// Each started shard must show its whole share within this: the API
	// server lists pods in milliseconds, and the window needs a few
	// evaluations before a headroom is exported.
	const settle = 30 * time.Second
	runShards := func(t *testing.T, total int) (map[int]map[string]*dto.MetricFamily, []*kneewatchProcess) {
		t.Helper()
		var procs []*kneewatchProcess
		for s := range total {
			procs = append(procs, startShard(t, bin, config, s, total))
		}
		out := map[int]map[string]*dto.MetricFamily{}
		var union []string
		for _, p := range procs {
			want := share(replicas, p.shard, total)
			if len(want) == 0 {
				t.Fatalf("the hash gives shard %d of %d none of %v; pick other pod names", p.shard, total, replicas)
			}
			out[p.shard] = p.waitForShare(t, want, settle)
			t.Logf("%s watches %d replicas, %s after start", p.name(), len(want), time.Since(p.started).Round(10*time.Millisecond))
			union = append(union, want...)
		}
		sort.Strings(union)
		if !slices.Equal(union, replicas) {
			t.Fatalf("the shards together watch %v, want each of %v once", union, replicas)
		}
		return out, procs
	}
	stopAll := func(ps []*kneewatchProcess) {
		for _, p := range ps {
			p.stop()
		}
	}

	single := startShard(t, bin, config, 0, 1)
	singleFams := single.waitForShare(t, replicas, settle)
	single.stop()

	var two map[int]map[string]*dto.MetricFamily
	t.Run("two shards split ten discovered replicas with no overlap and no gap", func(t *testing.T) {
		var procs []*kneewatchProcess
		two, procs = runShards(t, 2)
		stopAll(procs)
	})
	t.Run("the fleet recording rules over the shards equal a single instance's", func(t *testing.T) {
		if two == nil {
			t.Skip("the two shards did not run")
		}
		var shards []map[string]*dto.MetricFamily
		for s := range 2 {
			shards = append(shards, two[s])
		}
		want := fleetRecords(t, []map[string]*dto.MetricFamily{singleFams})
		got := fleetRecords(t, shards)
		if len(want) == 0 {
			t.Fatal("the fleet rules recorded nothing over the single instance")
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("fleet records (-single instance +union of shards):\n%s", diff)
		}
		t.Logf("%d fleet record series equal, e.g. %s", len(want), want[0])
	})
	t.Run("a third shard joining and one leaving rebalance on the first discovery list", func(t *testing.T) {
		_, procs := runShards(t, 3)
		t.Run("a pod that appears is watched by its owner alone", func(t *testing.T) {
			added := addPod("vllm-late")
			replicas = append(replicas, added)
			sort.Strings(replicas)
			owner := shard.Of(added, 3)
			for _, p := range procs {
				p.waitForShare(t, share(replicas, p.shard, 3), settle)
			}
			t.Logf("%s went to shard %d of 3", added, owner)
		})
		stopAll(procs)
		_, procs = runShards(t, 2)
		stopAll(procs)
	})
}

// shardConfig writes a kneewatch config that discovers the serving pods
// of ns through kubeconfig, with the knee profile the pods name.
func shardConfig(t *testing.T, kubeconfig, ns string) string {
	t.Helper()
	dir := t.TempDir()
	prof, err := os.ReadFile(filepath.Join(testtools.ModuleRoot(), "knee", "testdata", "valid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "llama.yaml"), prof, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`global:
  scrape_timeout: 200ms
profiles:
  - name: llama
    file: llama.yaml
kubernetes:
  kubeconfig: %s
  namespaces: [%s]
  label_selector: app.kubernetes.io/component=llm-server
`, kubeconfig, ns)
	path := filepath.Join(dir, "kneewatch.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// fleetRecords evaluates every rule of the generated kneewatch-fleet group
// with Prometheus's engine over the given kneewatch expositions, stored as
// one Prometheus would store scrapes of that many kneewatch instances, and
// returns each record's output series, sorted, as text.
func fleetRecords(t *testing.T, expositions []map[string]*dto.MetricFamily) []string {
	t.Helper()
	groups, err := rules.Generate(rules.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	store := promstore.New()
	at := time.Now().Truncate(time.Second)
	for i, fams := range expositions {
		if err := store.AddScrape(fams, at, map[string]string{"job": "kneewatch", "instance": fmt.Sprintf("kneewatch-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	ng := promstore.NewEngine()
	defer ng.Close()
	var out []string
	found := false
	for _, g := range groups {
		if g.Name != "kneewatch-fleet" {
			continue
		}
		found = true
		for _, r := range g.Rules {
			v, err := promstore.Instant(ng, store, r.Expr, at)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range v {
				out = append(out, fmt.Sprintf("%s%s %v", r.Record, s.Metric.String(), s.F))
			}
		}
	}
	if !found {
		t.Fatal("no kneewatch-fleet group in the generated rules")
	}
	sort.Strings(out)
	return out
}
