package collector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// paddedFixture is a vLLM fixture padded with series no adapter reads to
// about size bytes, and the number of lines it has (each charged as a
// series).
func paddedFixture(t *testing.T, size int) (string, int) {
	t.Helper()
	var b strings.Builder
	b.WriteString(readFixture(t, "vllm-v1-full-synthetic.prom"))
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "padding_series{i=\"%d\"} 1\n", i)
	}
	s := b.String()
	return s, strings.Count(s, "\n")
}

func TestParallelScrapesWaitForTheMemoryBudgetAndAllGetScraped(t *testing.T) {
	body, lines := paddedFixture(t, 256<<10)
	cost := int64(len(body)) + int64(lines)*seriesCost
	budget := cost * 5 / 2 // room for two scrapes at a time, not three
	var hits atomic.Int64
	const targets = 8
	for _, tt := range []struct {
		name  string
		write func(w http.ResponseWriter)
	}{
		{"with the body's size announced", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = w.Write([]byte(body))
		}},
		{"with the body's size unannounced (chunked)", func(w http.ResponseWriter) {
			for i := 0; i < len(body); i += 32 << 10 {
				_, _ = w.Write([]byte(body[i:min(i+32<<10, len(body))]))
				w.(http.Flusher).Flush()
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Each round's first requests are answered together, so the
			// scrapes contend for the budget rather than run one by one.
			var arrived chan struct{}
			srv := serve(t, func(w http.ResponseWriter, _ *http.Request) {
				if hits.Add(1) == targets {
					close(arrived)
				}
				<-arrived
				w.Header().Set("Content-Type", "text/plain; version=0.0.4")
				tt.write(w)
			})
			limits := ScrapeLimits{Timeout: 20 * time.Second, MaxSeries: NoLimit, MemoryBudgetBytes: budget}.WithBudget()
			footprints := make([]Footprint, targets)
			for round := range 2 {
				hits.Store(0)
				arrived = make(chan struct{})
				var wg sync.WaitGroup
				errs := make([]error, targets)
				for i := range targets {
					wg.Go(func() {
						sc := NewScraper(srv.Client(), limits).WithFootprint(&footprints[i])
						_, errs[i] = sc.Scrape(context.Background(), srv.URL, Options{})
					})
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Errorf("round %d, target %d: %v", round, i, err)
					}
				}
				// Every scrape gave back all it held.
				if !limits.Budget.sem.TryAcquire(budget) {
					t.Fatal("budget still held after every scrape ended")
				}
				limits.Budget.sem.Release(budget)
				t.Logf("round %d: %d targets each costing %d KiB (%d lines), budget %d KiB: %d fetches; footprint %d KiB",
					round, targets, cost>>10, lines, budget>>10, hits.Load(), footprints[0].Bytes()>>10)
				// A first scrape that runs short is fetched again once,
				// charged all the limits let it cost (unseenBodyCharge).
				if round == 0 && hits.Load() > 2*targets {
					t.Errorf("round 0: %d fetches for %d targets, want at most two each", hits.Load(), targets)
				}
				if round == 1 && hits.Load() != targets {
					t.Errorf("with each target's footprint known, %d fetches for %d targets, want one each", hits.Load(), targets)
				}
			}
			if fp := footprints[0].Bytes(); fp < cost || fp > cost+readChunk+1 {
				t.Errorf("footprint %d, want the scrape's cost %d (up to a read chunk more)", fp, cost)
			}
		})
	}
}

func TestAScrapeThatCannotGetRoomFailsWithTheMemoryBudget(t *testing.T) {
	body, lines := paddedFixture(t, 64<<10)
	cost := int64(len(body)) + int64(lines)*seriesCost
	srv := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(body))
	})
	t.Run("when it needs more than the whole budget, at once", func(t *testing.T) {
		limits := ScrapeLimits{Timeout: 5 * time.Second, MemoryBudgetBytes: cost / 2}
		start := time.Now()
		_, err := NewScraper(srv.Client(), limits).Scrape(context.Background(), srv.URL, Options{})
		if !errors.Is(err, ErrMemoryBudget) || !strings.Contains(err.Error(), "more than the whole budget") {
			t.Fatalf("err = %v, want ErrMemoryBudget, more than the whole budget", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("failed after %s, want at once", d)
		}
		t.Logf("%v", err)
	})
	t.Run("when parallel scrapes hold the budget past its timeout", func(t *testing.T) {
		limits := ScrapeLimits{Timeout: 200 * time.Millisecond, MemoryBudgetBytes: 2 * cost}.WithBudget()
		held := limits.Budget.reservation()
		if err := held.wait(context.Background(), 2*cost-100); err != nil {
			t.Fatal(err)
		}
		_, err := NewScraper(srv.Client(), limits).Scrape(context.Background(), srv.URL, Options{})
		if !errors.Is(err, ErrMemoryBudget) || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waited") {
			t.Fatalf("err = %v, want ErrMemoryBudget after waiting, not a timeout", err)
		}
		t.Logf("%v", err)
		held.release()
		if _, err := NewScraper(srv.Client(), limits).Scrape(context.Background(), srv.URL, Options{}); err != nil {
			t.Errorf("with the budget free again: %v", err)
		}
	})
}

// TestABodyOfUnknownSizeIsChargedWhatTheLimitsLetItCost: what a first
// scrape that ran short of budget waits for before it fetches again.
func TestABodyOfUnknownSizeIsChargedWhatTheLimitsLetItCost(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		name       string
		limits     ScrapeLimits
		known      bool // the target's last scrape left a footprint
		wantCharge int64
	}{
		{"the body limit and a series per line up to the series limit",
			ScrapeLimits{MaxBodyBytes: mib, MaxSeries: 1000, MemoryBudgetBytes: 256 * mib}, false, (mib + 1) + 1001*seriesCost},
		{"without a series limit, a series per 4 bytes",
			ScrapeLimits{MaxBodyBytes: mib, MaxSeries: NoLimit, MemoryBudgetBytes: 256 * mib}, false, (mib + 1) + (mib+1)/4*seriesCost},
		{"never more than the whole budget",
			ScrapeLimits{MaxBodyBytes: 16 * mib, MaxSeries: NoLimit, MemoryBudgetBytes: 64 * mib}, false, 64 * mib},
		{"nothing when the last scrape's footprint is known",
			ScrapeLimits{MaxBodyBytes: mib, MaxSeries: 1000, MemoryBudgetBytes: 256 * mib}, true, 0},
		{"nothing without a body limit",
			ScrapeLimits{MaxBodyBytes: NoLimit, MaxSeries: 1000, MemoryBudgetBytes: 256 * mib}, false, 0},
		{"nothing without a budget",
			ScrapeLimits{MaxBodyBytes: mib, MaxSeries: 1000, MemoryBudgetBytes: NoLimit}, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var fp Footprint
			if tt.known {
				fp.set(300<<10, 100<<10)
			}
			sc := NewScraper(http.DefaultClient, tt.limits).WithFootprint(&fp)
			if got := sc.unseenBodyCharge(); got != tt.wantCharge {
				t.Errorf("charge %d, want %d", got, tt.wantCharge)
			}
		})
	}
}

// TestFirstScrapesOfSmallBodiesDoNotQueueForWhatTheLimitsAllow: a fleet's
// first scrapes, whose bodies' sizes are not announced, are charged as
// their bodies arrive, so small bodies are read side by side under a
// budget far smaller than what the limits let each cost. Each server
// sends half its body, then waits for every scrape to have started
// reading (or 2 s). Charged at the limits up front, one scrape at a time
// held the budget and the others waited to start.
func TestFirstScrapesOfSmallBodiesDoNotQueueForWhatTheLimitsAllow(t *testing.T) {
	body, lines := paddedFixture(t, 64<<10)
	cost := int64(len(body)) + int64(lines)*seriesCost
	const targets = 32
	var reading atomic.Int64
	var waitedOut atomic.Bool
	all := make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		half := len(body) / 2
		_, _ = w.Write([]byte(body[:half]))
		w.(http.Flusher).Flush()
		select {
		case <-all:
		case <-time.After(2 * time.Second):
			waitedOut.Store(true)
		}
		_, _ = w.Write([]byte(body[half:]))
	})
	client := srv.Client()
	client.Transport = countReaders{client.Transport, func() {
		if reading.Add(1) == targets {
			close(all)
		}
	}}
	// Room for all of them at their cost (and a read chunk each), not for
	// two at what a body at the default 16 MiB limit may cost.
	budget := targets * (cost + 2*readChunk)
	limits := ScrapeLimits{Timeout: 20 * time.Second, MemoryBudgetBytes: budget}.withDefaults()
	if limit := NewScraper(client, limits).WithFootprint(&Footprint{}).unseenBodyCharge(); limit < budget/2 {
		t.Fatalf("the limits' charge %d is not over half the budget %d: the test would not tell", limit, budget)
	}
	footprints := make([]Footprint, targets)
	errs := make([]error, targets)
	var wg sync.WaitGroup
	for i := range targets {
		wg.Go(func() {
			_, errs[i] = NewScraper(client, limits).WithFootprint(&footprints[i]).Scrape(context.Background(), srv.URL, Options{})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("target %d: %v", i, err)
		}
	}
	if waitedOut.Load() {
		t.Errorf("the first scrapes did not all start reading their bodies while the first ones read theirs: a scrape waited for budget the limits allow, not what its body costs")
	}
}

// countReaders calls started on the first read of each response body.
type countReaders struct {
	http.RoundTripper
	started func()
}

func (c countReaders) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.RoundTripper.RoundTrip(r)
	if err == nil {
		resp.Body = &firstRead{ReadCloser: resp.Body, started: c.started}
	}
	return resp, err
}

type firstRead struct {
	io.ReadCloser
	started func()
	once    sync.Once
}

func (f *firstRead) Read(p []byte) (int, error) {
	f.once.Do(f.started)
	return f.ReadCloser.Read(p)
}
