// Command kneewatch-scalebench measures what watching a fleet costs:
// kneewatch serve and a real Prometheus scrape the same N loopback targets
// (captured vLLM V1 and V0, SGLang and TGI expositions, counters advancing)
// at the same interval, in one run, and it reports each one's CPU-seconds
// per replica-scrape, CPU share and RSS, and their ratio, as Markdown
// (docs/benchmarks/scale.md under `make bench-scale`).
//
// CPU is each process's own user+system time from /proc, so other load on
// the machine slows the run but does not enter the figures; scrapes are
// counted at the targets, by User-Agent.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "kneewatch-scalebench:", err)
		}
		os.Exit(1)
	}
}

// fixtures are the engine expositions the targets serve, in turn.
var fixtures = []string{
	"vllm-v1-full-synthetic.prom",
	"vllm-v0-synthetic.prom",
	"sglang-current-synthetic.prom",
	"tgi-synthetic.prom",
}

type options struct {
	sizes                      []int
	interval, warmup, measure  time.Duration
	kneewatch, prometheus, out string
	root                       string
	command                    string // as invoked, for the report
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kneewatch-scalebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("n", "100", "comma-separated fleet sizes to measure")
	var o options
	fs.DurationVar(&o.interval, "interval", 15*time.Second, "scrape and evaluation interval of both")
	fs.DurationVar(&o.warmup, "warmup", time.Minute, "time before measuring (first scrapes, Prometheus's head)")
	fs.DurationVar(&o.measure, "measure", 2*time.Minute, "time measured at each size")
	fs.StringVar(&o.kneewatch, "kneewatch", "", "kneewatch binary (required)")
	fs.StringVar(&o.prometheus, "prometheus", "prometheus", "prometheus binary")
	fs.StringVar(&o.root, "root", ".", "repository root (fixtures and the knee profile)")
	fs.StringVar(&o.out, "out", "", "write the Markdown report here (default: stdout only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.command = "kneewatch-scalebench " + strings.Join(args, " ")
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-n: %q is not a fleet size (want a whole number ≥ 1)", s)
		}
		o.sizes = append(o.sizes, n)
	}
	if o.kneewatch == "" {
		return errors.New("-kneewatch: name the kneewatch binary (make bench-scale builds it)")
	}
	prom, err := exec.LookPath(o.prometheus)
	if err != nil {
		return fmt.Errorf("-prometheus: %w", err)
	}
	o.prometheus = prom
	var expos []*exposition
	for _, name := range fixtures {
		b, err := os.ReadFile(filepath.Join(o.root, "collector", "testdata", name))
		if err != nil {
			return err
		}
		e, err := parseExposition(b)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		expos = append(expos, e)
	}
	var results []result
	for _, n := range o.sizes {
		fmt.Fprintf(stderr, "measuring N=%d: %s warm-up, %s measured\n", n, o.warmup, o.measure)
		r, err := measure(ctx, o, n, expos)
		if err != nil {
			return fmt.Errorf("N=%d: %w", n, err)
		}
		results = append(results, r)
		fmt.Fprintln(stderr, r.row())
	}
	report := renderReport(o, results)
	fmt.Fprint(stdout, report)
	if o.out != "" {
		return os.WriteFile(o.out, []byte(report), 0o644)
	}
	return nil
}

// usage is one process's cost over the measured span.
type usage struct {
	cpu     float64 // CPU-seconds
	scrapes int64   // replica-scrapes it made
	rss     float64 // bytes at the end
}

func (u usage) perScrape() float64 { return u.cpu / float64(max(u.scrapes, 1)) }

type result struct {
	n                     int
	span                  time.Duration
	kneewatch, prometheus usage
}

func (r result) row() string {
	k, p := r.kneewatch, r.prometheus
	return fmt.Sprintf("| %d | %d | %.1f ms | %.1f%% | %.0f MiB | %d | %.1f ms | %.1f%% | %.0f MiB | %.2f | %.2f |",
		r.n, k.scrapes, 1e3*k.perScrape(), 100*k.cpu/r.span.Seconds(), k.rss/(1<<20),
		p.scrapes, 1e3*p.perScrape(), 100*p.cpu/r.span.Seconds(), p.rss/(1<<20),
		k.perScrape()/p.perScrape(), k.rss/p.rss)
}

func measure(ctx context.Context, o options, n int, expos []*exposition) (result, error) {
	f, err := startFleet(n, expos)
	if err != nil {
		return result{}, err
	}
	defer f.close()
	dir, err := os.MkdirTemp("", "kneewatch-scalebench-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	kw, err := startKneewatch(o, dir, f.urls)
	if err != nil {
		return result{}, err
	}
	defer stop(kw)
	pr, err := startPrometheus(o, dir, f.urls)
	if err != nil {
		return result{}, err
	}
	defer stop(pr)

	if err := sleep(ctx, o.warmup); err != nil {
		return result{}, err
	}
	k0, err1 := cpuSeconds(kw.Process.Pid)
	p0, err2 := cpuSeconds(pr.Process.Pid)
	ks0, ps0 := f.scrapes["kneewatch"].Load(), f.scrapes["prometheus"].Load()
	start := time.Now()
	if err := errors.Join(err1, err2); err != nil {
		return result{}, err
	}
	if err := sleep(ctx, o.measure); err != nil {
		return result{}, err
	}
	r := result{n: n, span: time.Since(start)}
	k1, err1 := cpuSeconds(kw.Process.Pid)
	p1, err2 := cpuSeconds(pr.Process.Pid)
	krss, err3 := rssBytes(kw.Process.Pid)
	prss, err4 := rssBytes(pr.Process.Pid)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return result{}, err
	}
	r.kneewatch = usage{cpu: k1 - k0, scrapes: f.scrapes["kneewatch"].Load() - ks0, rss: krss}
	r.prometheus = usage{cpu: p1 - p0, scrapes: f.scrapes["prometheus"].Load() - ps0, rss: prss}
	if r.kneewatch.scrapes == 0 || r.prometheus.scrapes == 0 {
		return r, fmt.Errorf("no scrapes measured (kneewatch %d, Prometheus %d): see %s", r.kneewatch.scrapes, r.prometheus.scrapes, dir)
	}
	return r, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// freePort returns a loopback address nothing listens on now.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func startKneewatch(o options, dir string, urls []string) (*exec.Cmd, error) {
	prof, err := filepath.Abs(filepath.Join(o.root, "knee", "testdata", "valid.yaml"))
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_timeout: 10s\nprofiles:\n  - name: p\n    file: %s\ntargets:\n", prof)
	for i, u := range urls {
		fmt.Fprintf(&b, "  - replica: replica-%d\n    metrics_url: %s\n    profile: p\n", i, u)
	}
	cfg := filepath.Join(dir, "kneewatch.yml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	return start(dir, "kneewatch", o.kneewatch, "serve", "--config.file", cfg, "--web.listen-address", addr,
		"--evaluation.interval", o.interval.String(), "--evaluation.window", (4 * o.interval).String(), "--log.level", "warn")
}

func startPrometheus(o options, dir string, urls []string) (*exec.Cmd, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: 10s\nscrape_configs:\n  - job_name: fleet\n    static_configs:\n      - targets:\n", o.interval)
	for _, u := range urls {
		fmt.Fprintf(&b, "          - %s\n", strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/metrics"))
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	return start(dir, "prometheus", o.prometheus, "--config.file", cfg, "--storage.tsdb.path", filepath.Join(dir, "tsdb"),
		"--web.listen-address", addr, "--log.level", "warn")
}

// start runs a process with its output in dir/name.log.
func start(dir, name, bin string, args ...string) (*exec.Cmd, error) {
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return cmd, nil
}

// stop ends a process this harness started, by its PID: SIGTERM, then
// SIGKILL after 20 s.
func stop(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func renderReport(o options, rs []result) string {
	var b strings.Builder
	b.WriteString(`# Scale: kneewatch against Prometheus on the same fleet

Written by ` + "`make bench-scale`" + ` (cmd/kneewatch-scalebench). In one run per fleet size N,
` + "`kneewatch serve`" + ` and a real Prometheus scrape the same N loopback targets at the same
interval. Each target listens on its own port and serves one of the captured expositions
(` + strings.Join(fixtures, ", ") + `, in turn) with counters and histograms that grow about 1%
a minute (whole counts, values written as vLLM's prometheus_client writes them). CPU is each
process's own user+system time from /proc over the measured span, so other load on the machine
slows the run but is not counted; replica-scrapes are counted at the targets by User-Agent, and
CPU per replica-scrape divides by the scrapes each made. RSS is VmRSS at the end of the span.
Prometheus also stores every series; kneewatch also evaluates headroom every interval. Neither
is scraped itself.

`)
	fmt.Fprintf(&b, "Interval %s, warm-up %s, measured %s per size. Run %s as\n`%s`.\n\n",
		o.interval, o.warmup, o.measure, time.Now().UTC().Format("2 January 2006 15:04 UTC"), o.command)
	b.WriteString("| N | kneewatch scrapes | kneewatch CPU per replica-scrape | kneewatch CPU share | kneewatch RSS | Prometheus scrapes | Prometheus CPU per replica-scrape | Prometheus CPU share | Prometheus RSS | CPU ratio kneewatch ÷ Prometheus | RSS ratio |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		b.WriteString(r.row() + "\n")
	}
	if len(rs) > 0 {
		b.WriteString("\nAs the fleet grows (a least-squares line over the sizes above; the extrapolation is the line's,\nnot a measurement):\n\n")
		b.WriteString(growth("kneewatch", rs, func(r result) usage { return r.kneewatch }, o.interval))
		b.WriteString(growth("Prometheus", rs, func(r result) usage { return r.prometheus }, o.interval))
	}
	return b.String()
}
