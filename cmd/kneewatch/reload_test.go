package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// metricValue returns the value of the first sample of /metrics whose line
// starts with prefix, or "" when there is none.
func metricValue(body, prefix string) string {
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line[strings.LastIndexByte(line, ' ')+1:]
		}
	}
	return ""
}

func TestServeReloadsOnSIGHUPAndPOSTKeepingTheRunningConfigWhenTheNewOneIsBad(t *testing.T) {
	srv := vllmFixtureServer(t)
	path := serveConfig(t, srv.URL+"/metrics")
	profile := filepath.Join(filepath.Dir(path), "llama.yaml")
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config.file", path, "--web.listen-address", addr,
			"--evaluation.interval", "200ms", "--evaluation.window", "2s", "--log.level", "error"}, io.Discard, io.Discard)
	}()
	scrape := func() string {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	const knee = `kneewatch_knee_concurrency{model="meta-llama/Llama-3.1-8B-Instruct",namespace="",pod="",profile="llama",replica="vllm-0"}`
	const ok = `kneewatch_replica_evaluation_ok{model="meta-llama/Llama-3.1-8B-Instruct",namespace="",pod="",profile="llama",reason="",replica="vllm-0"}`
	// waitFor polls /metrics until every sample prefix has the value wanted.
	waitFor := func(step string, want map[string]string) string {
		t.Helper()
		var body string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			body = scrape()
			all := true
			for prefix, v := range want {
				all = all && metricValue(body, prefix) == v
			}
			if all {
				for prefix, v := range want {
					t.Logf("%s: %s %s", step, prefix, v)
				}
				return body
			}
		}
		for prefix, v := range want {
			t.Errorf("%s: %s = %q, want %q", step, prefix, metricValue(body, prefix), v)
		}
		return body
	}
	reload := func() int {
		resp, err := http.Post("http://"+addr+"/-/reload", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	write := func(file, text string) {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := waitFor("start", map[string]string{knee: "112", ok: "1", "kneewatch_config_last_reload_successful": "1"})
	startedAt := metricValue(before, "kneewatch_config_last_reload_success_timestamp_seconds")

	// A changed profile, by POST: the new knee is exported, and the
	// replica keeps its window (its evaluation stays ok, not warming up).
	prof, err := os.ReadFile(profile)
	if err != nil {
		t.Fatal(err)
	}
	write(profile, regexp.MustCompile(`(?m)^knee:\n  concurrency: 112`).ReplaceAllString(string(prof), "knee:\n  concurrency: 64"))
	time.Sleep(10 * time.Millisecond)
	if code := reload(); code != http.StatusOK {
		t.Fatalf("POST /-/reload with a changed profile: %d, want 200", code)
	}
	after := waitFor("changed profile by POST", map[string]string{knee: "64", ok: "1", "kneewatch_config_last_reload_successful": "1"})
	if ts := metricValue(after, "kneewatch_config_last_reload_success_timestamp_seconds"); ts == startedAt {
		t.Errorf("the success timestamp did not move on a good reload (%s)", ts)
	}
	if strings.Contains(after, `reason="warming_up"`) {
		t.Error("a reload that only changed the profile restarted the replica's window")
	}

	// A bad config, by SIGHUP: the process lives on, the previous config
	// keeps running, the gauge says so.
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	write(path, string(good)+"    engine: not-an-engine\n")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("bad config by SIGHUP", map[string]string{knee: "64", ok: "1", "kneewatch_config_last_reload_successful": "0"})
	if code := reload(); code != http.StatusInternalServerError {
		t.Errorf("POST /-/reload with a bad config: %d, want 500", code)
	}

	// The good config again, by SIGHUP.
	write(path, string(good))
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("good config by SIGHUP", map[string]string{knee: "64", ok: "1", "kneewatch_config_last_reload_successful": "1"})

	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}
