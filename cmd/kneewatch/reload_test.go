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

// TestServeReloadsOnSIGHUPAndPOSTKeepingTheRunningConfigWhenTheNewOneIsBad
// reloads a running serve with each signal and each kind of change:
//
//	step                          by      applied  knee  vllm-1  success timestamp
//	a changed profile             POST    yes      64    -       moves
//	a changed config (+ target)   POST    yes      64    up      moves
//	a changed profile             SIGHUP  yes      96    up      moves
//	a bad config                  SIGHUP  no       96    up      stays
//	the same bad config           POST    no (500) 96    up      stays
//	the good config again         SIGHUP  yes      96    up      moves
//
// Each step logs the values /metrics exported.
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
	const (
		knee       = `kneewatch_knee_concurrency{model="meta-llama/Llama-3.1-8B-Instruct",namespace="",pod="",profile="llama",replica="vllm-0"}`
		knee1      = `kneewatch_knee_concurrency{model="meta-llama/Llama-3.1-8B-Instruct",namespace="",pod="",profile="llama",replica="vllm-1"}`
		ok         = `kneewatch_replica_evaluation_ok{model="meta-llama/Llama-3.1-8B-Instruct",namespace="",pod="",profile="llama",reason="",replica="vllm-0"}`
		up1        = `kneewatch_target_up{namespace="",pod="",replica="vllm-1",source="engine"}`
		successful = "kneewatch_config_last_reload_successful"
		stamp      = "kneewatch_config_last_reload_success_timestamp_seconds"
	)
	// waitFor polls /metrics until every sample prefix has the value wanted
	// ("" for absent), and logs what it saw.
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
				break
			}
		}
		for prefix, v := range want {
			if got := metricValue(body, prefix); got != v {
				t.Errorf("%s: %s = %q, want %q", step, prefix, got, v)
			}
		}
		t.Logf("%-28s knee %s, vllm-1 knee %q up %q, reload successful %s, success timestamp %s", step+":",
			metricValue(body, knee), metricValue(body, knee1), metricValue(body, up1), metricValue(body, successful), metricValue(body, stamp))
		return body
	}
	// checkStamp holds the success timestamp to the previous step's: moved
	// after a good reload, the same after a bad one.
	last := ""
	checkStamp := func(step, body string, moves bool) {
		t.Helper()
		ts := metricValue(body, stamp)
		switch {
		case ts == "":
			t.Errorf("%s: no %s", step, stamp)
		case moves && ts == last:
			t.Errorf("%s: the success timestamp did not move on a good reload (%s)", step, ts)
		case !moves && ts != last:
			t.Errorf("%s: the success timestamp moved from %s to %s on a bad reload", step, last, ts)
		}
		last = ts
	}
	reload := func() int {
		resp, err := http.Post("http://"+addr+"/-/reload", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	hup := func() {
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	write := func(file, text string) {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // the success timestamp has time to move
	}
	setKnee := func(from, to string) {
		t.Helper()
		prof, err := os.ReadFile(profile)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(`(?m)^knee:\n  concurrency: ` + from + `\n`)
		if !re.Match(prof) {
			t.Fatalf("the profile's knee is not %s", from)
		}
		write(profile, re.ReplaceAllString(string(prof), "knee:\n  concurrency: "+to+"\n"))
	}

	body := waitFor("start", map[string]string{knee: "112", ok: "1", successful: "1", up1: ""})
	last = metricValue(body, stamp)

	// A changed profile, by POST: the new knee is exported, and the
	// replica keeps its window (its evaluation stays ok, not warming up).
	setKnee("112", "64")
	if code := reload(); code != http.StatusOK {
		t.Fatalf("POST /-/reload with a changed profile: %d, want 200", code)
	}
	body = waitFor("changed profile by POST", map[string]string{knee: "64", ok: "1", successful: "1"})
	checkStamp("changed profile by POST", body, true)
	if strings.Contains(body, `reason="warming_up",replica="vllm-0"`) {
		t.Error("a reload that only changed the profile restarted the replica's window")
	}

	// A changed config, by POST: a second replica, which is scraped and
	// judged by the same profile.
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	good := string(first) + "  - replica: vllm-1\n    metrics_url: " + srv.URL + "/metrics\n    profile: llama\n"
	write(path, good)
	if code := reload(); code != http.StatusOK {
		t.Fatalf("POST /-/reload with a target added: %d, want 200", code)
	}
	body = waitFor("target added by POST", map[string]string{knee: "64", knee1: "64", up1: "1", successful: "1"})
	checkStamp("target added by POST", body, true)

	// A changed profile, by SIGHUP: both replicas take the new knee.
	setKnee("64", "96")
	hup()
	body = waitFor("changed profile by SIGHUP", map[string]string{knee: "96", knee1: "96", ok: "1", up1: "1", successful: "1"})
	checkStamp("changed profile by SIGHUP", body, true)

	// A bad config, by SIGHUP: the process lives on, the previous config
	// keeps running, the gauge says so and the timestamp stays.
	write(path, good+"    engine: not-an-engine\n")
	hup()
	body = waitFor("bad config by SIGHUP", map[string]string{knee: "96", knee1: "96", ok: "1", up1: "1", successful: "0"})
	checkStamp("bad config by SIGHUP", body, false)
	if code := reload(); code != http.StatusInternalServerError {
		t.Errorf("POST /-/reload with a bad config: %d, want 500", code)
	}
	body = waitFor("bad config by POST", map[string]string{knee: "96", knee1: "96", up1: "1", successful: "0"})
	checkStamp("bad config by POST", body, false)

	// The good config again, by SIGHUP.
	write(path, good)
	hup()
	body = waitFor("good config by SIGHUP", map[string]string{knee: "96", knee1: "96", ok: "1", up1: "1", successful: "1"})
	checkStamp("good config by SIGHUP", body, true)

	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}
