package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/config"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Defaults for ScrapeLimits fields left zero.
const (
	DefaultScrapeTimeout = 10 * time.Second
	DefaultMaxBodyBytes  = 16 << 20
	DefaultMaxSeries     = 50_000
)

// acceptHeader asks for the classic text format, the only one parsed here.
const acceptHeader = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// ScrapeLimits bound what one scrape may cost. Zero fields take the
// Default* values.
type ScrapeLimits struct {
	// Timeout bounds the whole request, body included.
	Timeout time.Duration
	// MaxBodyBytes bounds the body after gzip decoding (so a small
	// compressed body cannot expand without limit).
	MaxBodyBytes int64
	// MaxSeries bounds the number of sample lines, as Prometheus's
	// sample_limit does.
	MaxSeries int
}

func (l ScrapeLimits) withDefaults() ScrapeLimits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultScrapeTimeout
	}
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.MaxSeries <= 0 {
		l.MaxSeries = DefaultMaxSeries
	}
	return l
}

// Errors a ScrapeError may wrap, for errors.Is.
var (
	ErrBodyTooLarge  = errors.New("body exceeds size limit")
	ErrTooManySeries = errors.New("too many series")
)

// ScrapeError says which target failed and how. The URL is redacted of any
// password.
type ScrapeError struct {
	URL string
	Err error
}

func (e *ScrapeError) Error() string { return "scrape " + e.URL + ": " + e.Err.Error() }
func (e *ScrapeError) Unwrap() error { return e.Err }

// Scraper fetches and parses metric endpoints. It is safe for concurrent
// use.
type Scraper struct {
	client *http.Client
	limits ScrapeLimits
	now    func() time.Time
}

// NewScraper returns a scraper using client (see NewHTTPClient) and limits.
func NewScraper(client *http.Client, limits ScrapeLimits) *Scraper {
	if client == nil {
		client = &http.Client{}
	}
	return &Scraper{client: client, limits: limits.withDefaults(), now: time.Now}
}

// NewHTTPClient builds a scrape client from a Prometheus-style HTTP client
// config (TLS, bearer token file, basic auth, proxy), as Prometheus does.
// name identifies the client in its connection metrics and errors.
func NewHTTPClient(cfg config.HTTPClientConfig, name string) (*http.Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("http client config for %s: %w", name, err)
	}
	c, err := config.NewClientFromConfig(cfg, name, config.WithUserAgent("kneewatch"))
	if err != nil {
		return nil, fmt.Errorf("http client config for %s: %w", name, err)
	}
	return c, nil
}

// Scrape fetches an engine's metrics and normalizes them with opts.
// Snapshot.Time is when the request started, as in Prometheus.
func (s *Scraper) Scrape(ctx context.Context, target string, opts Options) (Snapshot, error) {
	families, at, err := s.Fetch(ctx, target)
	if err != nil {
		return Snapshot{}, err
	}
	snap, err := Normalize(families, opts)
	if err != nil {
		return Snapshot{}, &ScrapeError{URL: redact(target), Err: err}
	}
	snap.Time = at
	return snap, nil
}

// ScrapeDCGM fetches a dcgm-exporter endpoint and reads its GPUs.
func (s *Scraper) ScrapeDCGM(ctx context.Context, target string) (DCGMSnapshot, error) {
	families, at, err := s.Fetch(ctx, target)
	if err != nil {
		return DCGMSnapshot{}, err
	}
	d, err := NormalizeDCGM(families)
	if err != nil {
		return DCGMSnapshot{}, &ScrapeError{URL: redact(target), Err: err}
	}
	d.Time = at
	return d, nil
}

// Fetch GETs target within the limits and parses the text exposition. It
// returns the families and the time the request started.
func (s *Scraper) Fetch(ctx context.Context, target string) (map[string]*dto.MetricFamily, time.Time, error) {
	start := s.now()
	fail := func(err error) (map[string]*dto.MetricFamily, time.Time, error) {
		return nil, start, &ScrapeError{URL: redact(target), Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, s.limits.Timeout)
	defer cancel()
	body, err := s.get(ctx, target)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %s: %w", s.limits.Timeout, err)
		}
		return fail(err)
	}
	if n := countSampleLines(body); n > s.limits.MaxSeries {
		return fail(fmt.Errorf("%w: %d sample lines, limit %d", ErrTooManySeries, n, s.limits.MaxSeries))
	}
	families, err := ParseText(bytes.NewReader(body))
	if err != nil {
		return fail(err)
	}
	return families, start, nil
}

func (s *Scraper) get(ctx context.Context, target string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("bad URL: %w", err)
	}
	req.Header.Set("Accept", acceptHeader)
	// Set explicitly so the body is decoded here, after which the size
	// limit applies; Prometheus's own client disables transparent gzip.
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(s.limits.Timeout.Seconds(), 'f', -1, 64))
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP status %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); strings.Contains(ct, "protobuf") {
		return nil, fmt.Errorf("unsupported content type %q: only the text format is parsed", ct)
	}
	var r io.Reader = resp.Body
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		gz, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		defer gz.Close()
		r = gz
	}
	body, err := io.ReadAll(io.LimitReader(r, s.limits.MaxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading body: %w", err)
	}
	if int64(len(body)) > s.limits.MaxBodyBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, s.limits.MaxBodyBytes)
	}
	return body, nil
}

// ParseText parses the Prometheus text exposition format. Metric names may
// contain colons (vllm:…, sglang:…).
func ParseText(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing text exposition: %w", err)
	}
	return families, nil
}

// countSampleLines counts lines that are neither blank nor comments: one
// per exposed sample.
func countSampleLines(body []byte) int {
	n := 0
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		line = bytes.TrimLeft(line, " \t")
		if len(line) > 0 && line[0] != '#' {
			n++
		}
	}
	return n
}

// redact hides a password in target, if any, for error messages.
func redact(target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return target
	}
	return u.Redacted()
}
