package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// process is a real binary the test started; stop ends it by its PID.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string // file holding its stdout and stderr
	done chan struct{}
	err  error // Wait's result, once done is closed
}

// startProcess starts bin with args, its output going to a log file in
// dir, and registers a cleanup that stops it.
func startProcess(t *testing.T, dir, name, bin string, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop sends SIGTERM, waits up to 10 s for a graceful exit, then kills.
func (p *process) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Logf("%s (pid %d) ignored SIGTERM for 10s; killing it", p.name, p.cmd.Process.Pid)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// tail returns the end of the process's log, for failure messages.
func (p *process) tail() string {
	b, _ := os.ReadFile(p.log)
	const n = 3000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// waitReady polls url until it answers 200, the process exits, or the
// deadline passes.
func (p *process) waitReady(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	err := poll(timeout, 100*time.Millisecond, func() (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("%s exited: %v", p.name, p.err)
		}
		resp, err := client.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("%s not ready at %s: %v\n--- %s log ---\n%s", p.name, url, err, p.name, p.tail())
	}
}

// errTimeout is poll's error when the deadline passes.
var errTimeout = errors.New("deadline passed")

// poll calls check every interval until it returns true or an error, or
// timeout passes.
func poll(timeout, interval time.Duration, check func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := check()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %s", errTimeout, timeout)
		}
		time.Sleep(interval)
	}
}

// freeAddr returns a 127.0.0.1 address with a port free a moment ago, for
// binaries that cannot listen on port 0 and report the port they got.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// buildKneewatch builds the kneewatch binary from this checkout into dir.
func buildKneewatch(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build kneewatch: %v", err)
	}
	bin := filepath.Join(dir, "kneewatch")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin, "./cmd/kneewatch")
	cmd.Dir = testtools.ModuleRoot()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build ./cmd/kneewatch: %v\n%s", err, out.String())
	}
	return bin
}

// runKneewatch runs a short kneewatch command and returns its output.
func runKneewatch(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kneewatch %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// startKneewatch writes the rules kneewatch generates from configPath into
// dir and starts `kneewatch serve` with them, at the tests' evaluation
// interval and window; it returns the process, its address and the rule
// file for Prometheus.
func startKneewatch(t *testing.T, dir, bin, configPath string) (kw *process, addr, rulesPath string) {
	t.Helper()
	rulesPath = filepath.Join(dir, "kneewatch.rules.yml")
	runKneewatch(t, bin, "rules", "--config.file", configPath, "--evaluation.window", model.Duration(evalWindow).String(), "--out", rulesPath)
	addr = freeAddr(t)
	kw = startProcess(t, dir, "kneewatch", bin, "serve", "--config.file", configPath,
		"--web.listen-address", addr, "--evaluation.interval", evalInterval.String(), "--evaluation.window", evalWindow.String())
	kw.waitReady(t, "http://"+addr+"/-/ready", 30*time.Second)
	return kw, addr, rulesPath
}

// startAlertmanager starts a single Alertmanager (no cluster) with config.
func startAlertmanager(t *testing.T, dir, bin, config string) (am *process, addr string) {
	t.Helper()
	addr = freeAddr(t)
	writeFile(t, filepath.Join(dir, "alertmanager.yml"), config)
	am = startProcess(t, dir, "alertmanager", bin, "--config.file=alertmanager.yml",
		"--storage.path="+filepath.Join(dir, "alertmanager-data"), "--web.listen-address="+addr, "--cluster.listen-address=")
	am.waitReady(t, "http://"+addr+"/-/ready", 30*time.Second)
	return am, addr
}

// startPrometheus starts Prometheus with config, its address chosen first
// so config may not name it.
func startPrometheus(t *testing.T, dir, bin, config string) (prom *process, addr string) {
	t.Helper()
	addr = freeAddr(t)
	writeFile(t, filepath.Join(dir, "prometheus.yml"), config)
	prom = startProcess(t, dir, "prometheus", bin, "--config.file=prometheus.yml",
		"--storage.tsdb.path="+filepath.Join(dir, "prometheus-data"), "--web.listen-address="+addr)
	prom.waitReady(t, "http://"+addr+"/-/ready", 60*time.Second)
	return prom, addr
}
