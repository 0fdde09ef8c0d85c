package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
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
	// DefaultMemoryBudgetBytes bounds the memory of the scrapes in flight
	// at once (see ScrapeLimits.MemoryBudgetBytes).
	DefaultMemoryBudgetBytes = 256 << 20
)

// NoLimit, in a ScrapeLimits size or count field, means no limit at all
// (zero means the default).
const NoLimit = -1

// acceptHeader asks for OpenMetrics first and the classic text format
// second, as Prometheus does; both text formats are parsed. Protobuf is
// not asked for.
const acceptHeader = "application/openmetrics-text;version=1.0.0;q=0.6," +
	"application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1"

// parseCostFactor is the memory a scrape holds per body byte while it
// reads the body; seriesCost is what each parsed series adds on top (its
// metric, label pairs and strings in client_model form, measured at
// 300–500 bytes for short series).
const (
	parseCostFactor = 1
	seriesCost      = 512
)

// ScrapeLimits bound what one scrape may cost. Zero fields take the
// Default* values; NoLimit removes a limit.
type ScrapeLimits struct {
	// Timeout bounds the whole scrape: the request, the body and any wait
	// for the memory budget.
	Timeout time.Duration
	// MaxBodyBytes bounds the body after gzip decoding (so a small
	// compressed body cannot expand without limit).
	MaxBodyBytes int64
	// MaxSeries bounds the number of sample lines, as Prometheus's
	// sample_limit does.
	MaxSeries int
	// MemoryBudgetBytes bounds what the scrapes in flight at once hold
	// together, counted as the body's bytes plus seriesCost per series
	// parsed, rather than letting many parallel scrapes of large bodies
	// take the process's memory. A scrape waits for room before it reads
	// its body, in arrival order, within its Timeout: for the announced
	// body size, or what its target needed last time (see Footprint). If
	// it runs short part-way it gives its share back and waits again for
	// all it now knows it needs (at a target never scraped before, all the
	// limits let a body cost, the rest given back once it is read). Only a
	// scrape that cannot get room within its Timeout, or that needs more
	// than the whole budget, fails with ErrMemoryBudget. Scrapes sharing
	// Budget share the bound.
	MemoryBudgetBytes int64
	// Budget is the shared budget, built from MemoryBudgetBytes when nil.
	Budget *MemoryBudget
}

func (l ScrapeLimits) withDefaults() ScrapeLimits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultScrapeTimeout
	}
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.MaxSeries == 0 {
		l.MaxSeries = DefaultMaxSeries
	}
	return l.WithBudget()
}

// WithBudget returns l with its memory budget built, unless one of the
// right size is already set. Every Scraper made from the returned limits
// shares that one budget (the watcher builds it once for all its targets).
func (l ScrapeLimits) WithBudget() ScrapeLimits {
	if l.Budget == nil || l.Budget.size != budgetSize(l.MemoryBudgetBytes) {
		l.Budget = NewMemoryBudget(l.MemoryBudgetBytes)
	}
	return l
}

// Errors a ScrapeError may wrap, for errors.Is.
var (
	ErrBodyTooLarge  = errors.New("body exceeds size limit")
	ErrTooManySeries = errors.New("too many series")
	ErrMemoryBudget  = errors.New("scrape memory budget exhausted")
)

// ScrapeError says which target failed and how. The URL is redacted of any
// password and query parameter values.
type ScrapeError struct {
	URL string
	Err error
}

func (e *ScrapeError) Error() string { return "scrape " + e.URL + ": " + e.Err.Error() }
func (e *ScrapeError) Unwrap() error { return e.Err }

// Scraper fetches and parses metric endpoints. It is safe for concurrent
// use.
type Scraper struct {
	client    *http.Client
	limits    ScrapeLimits
	now       func() time.Time
	footprint *Footprint
}

// NewScraper returns a scraper using client (see NewHTTPClient) and limits.
func NewScraper(client *http.Client, limits ScrapeLimits) *Scraper {
	if client == nil {
		client = &http.Client{}
	}
	return &Scraper{client: client, limits: limits.withDefaults(), now: time.Now}
}

// WithFootprint has s remember in f what each successful scrape charged to
// the memory budget, and wait for that much at once on the next (f is the
// target's, kept between its scrapes). It returns s.
func (s *Scraper) WithFootprint(f *Footprint) *Scraper {
	s.footprint = f
	return s
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
	in, at, release, err := s.fetch(ctx, target, engineWanted)
	defer release()
	if err != nil {
		return Snapshot{}, err
	}
	snap, err := normalizeIndex(in.index(), opts)
	if err != nil {
		return Snapshot{}, &ScrapeError{URL: redact(target), Err: err}
	}
	snap.Time = at
	return snap, nil
}

// ScrapeDCGM fetches a dcgm-exporter endpoint and reads its GPUs.
func (s *Scraper) ScrapeDCGM(ctx context.Context, target string) (DCGMSnapshot, error) {
	in, at, release, err := s.fetch(ctx, target, dcgmWanted)
	defer release()
	if err != nil {
		return DCGMSnapshot{}, err
	}
	d, err := normalizeDCGM(in.families, slices.Contains(in.skipped, dcgmPrefix))
	if err != nil {
		return DCGMSnapshot{}, &ScrapeError{URL: redact(target), Err: err}
	}
	d.Time = at
	return d, nil
}

// Fetch GETs target within the limits and parses the whole exposition. It
// returns the families and the time the request started.
func (s *Scraper) Fetch(ctx context.Context, target string) (map[string]*dto.MetricFamily, time.Time, error) {
	in, at, release, err := s.fetch(ctx, target, nil)
	release()
	return in.families, at, err
}

// fetch is Fetch keeping only the families want names (all when nil),
// and the scrape's memory reservation until release is called, after the
// families have been normalized. The families are not to be read after
// release: the stream parser reuses their memory (with want nil it is
// not used, and Fetch's families stay the caller's).
//
// The timeout bounds the whole scrape, waits for the memory budget
// included. An attempt that runs short of budget part-way gives back all
// it holds and is made again, waiting first for everything the short one
// found it needs: never waiting while holding is what keeps parallel
// scrapes from holding each other up (see MemoryBudget).
func (s *Scraper) fetch(ctx context.Context, target string, want *wantedNames) (familyIndexInput, time.Time, func(), error) {
	start := s.now()
	ctx, cancel := context.WithTimeout(ctx, s.limits.Timeout)
	defer cancel()
	need := s.footprint.Bytes()
	if size := s.limits.Budget.Size(); size > 0 {
		need = min(need, size) // a budget made smaller since: the body may have shrunk too
	}
	var waited time.Duration
	for {
		// A snapshot is stamped with the start of the request it was read
		// from, as Prometheus stamps a scrape.
		start = s.now()
		res := s.limits.Budget.reservation()
		in, size, err := s.attempt(ctx, target, want, res, need)
		waited += res.waited
		if err == nil {
			s.footprint.set(res.used, size)
			if in.scanner == nil {
				return in, start, res.release, nil
			}
			return in, start, func() { in.release(); res.release() }, nil
		}
		if in.scanner != nil {
			in.release()
		}
		res.release()
		if n, again := isBudgetShort(err); again {
			// A body not seen before that ran short is fetched again
			// once, charged all it can cost: growing the charge step by
			// step, each attempt dropping what it read, took 16 first
			// scrapes of 8 MiB bodies 54-78 fetches.
			need = max(n, s.unseenBodyCharge())
			continue
		}
		if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrMemoryBudget) {
			err = fmt.Errorf("timed out after %s%s: %w", s.limits.Timeout, waitedNote(waited), err)
		}
		return familyIndexInput{}, start, func() {}, &ScrapeError{URL: redact(target), Err: err}
	}
}

func waitedNote(d time.Duration) string {
	if d < time.Millisecond {
		return ""
	}
	return fmt.Sprintf(" (%s of it waiting for the scrape memory budget)", d.Round(time.Millisecond))
}

// attempt is one try of fetch, holding res, which first waits for need
// bytes or what the response announces, whichever is more. It returns the
// body's size too.
func (s *Scraper) attempt(ctx context.Context, target string, want *wantedNames, res *reservation, need int64) (familyIndexInput, int64, error) {
	body, format, err := s.get(ctx, target, res, need)
	if err != nil {
		return familyIndexInput{}, 0, err
	}
	size := int64(len(body))
	n := countSampleLines(body)
	if s.limits.MaxSeries > 0 && n > s.limits.MaxSeries {
		putBodyBuffer(body)
		return familyIndexInput{}, 0, fmt.Errorf("%w: %d sample lines, limit %d", ErrTooManySeries, n, s.limits.MaxSeries)
	}
	// readBody charged a series per newline; a last line without one is
	// charged here.
	if err := res.take(max(int64(n)-int64(bytes.Count(body, []byte{'\n'})), 0)*seriesCost, 0); err != nil {
		putBodyBuffer(body)
		if _, short := isBudgetShort(err); short {
			return familyIndexInput{}, 0, err
		}
		return familyIndexInput{}, 0, fmt.Errorf("parsing %d series: %w", n, err)
	}
	in, err := parse(body, format, want)
	if format != openMetricsFormat {
		// The text parsers copy what they keep out of the body (Prometheus's
		// OpenMetrics parser may not), so its buffer serves the next scrape.
		putBodyBuffer(body)
	}
	return in, size, err
}

func (s *Scraper) get(ctx context.Context, target string, res *reservation, need int64) ([]byte, expfmt.Format, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, "", errors.New("bad URL")
	}
	req.Header.Set("Accept", acceptHeader)
	// Set explicitly so the body is decoded here, after which the size
	// limit applies; Prometheus's own client disables transparent gzip.
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(s.limits.Timeout.Seconds(), 'f', -1, 64))
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, "", redactURLError(err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("HTTP status %s", resp.Status)
	}
	format, err := responseFormat(resp.Header.Get("Content-Type"))
	if err != nil {
		return nil, "", err
	}
	var r io.Reader = resp.Body
	gzipped := strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip")
	if gzipped {
		gz, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, "", fmt.Errorf("gzip body: %w", err)
		}
		defer gz.Close()
		r = gz
	}
	// The first share of budget: the body's announced size, or a first
	// chunk. The buffer is made as large as the body is announced, or was
	// last time, at once: growing it by appending would leave several times
	// the body in garbage.
	first, size := int64(readChunk), s.footprint.bodyBytes()+1
	if n := resp.ContentLength; n >= 0 && !gzipped {
		if s.limits.MaxBodyBytes > 0 && n > s.limits.MaxBodyBytes {
			return nil, "", fmt.Errorf("%w: Content-Length %d, limit %d", ErrBodyTooLarge, n, s.limits.MaxBodyBytes)
		}
		first, size = n+1, n+1
	}
	if s.limits.MaxBodyBytes > 0 {
		first = min(first, s.limits.MaxBodyBytes+1)
		size = min(size, s.limits.MaxBodyBytes+1)
	}
	if err := res.wait(ctx, max(first*parseCostFactor, need)); err != nil {
		return nil, "", err
	}
	body, err := readBody(r, s.limits.MaxBodyBytes, res, first, size)
	if err != nil {
		return nil, "", err
	}
	// What the body and its series cost is charged by now; the rest of a
	// reservation made for a body of unknown size (see unseenBodyCharge)
	// goes back at once, to the scrapes waiting for it.
	res.trim()
	return body, format, nil
}

// unseenBodyCharge is what a scrape of a target never scraped before
// waits for when its first attempt ran short of budget part-way: as much
// as the limits let a body cost (capped at the whole budget), given back
// once the body is read (reservation.trim), so the second attempt is the
// last. The first attempt is charged as the body arrives: charged at the
// limits up front, the first scrapes of a fleet of small bodies would
// queue six at a time for a default budget, and a large fleet's first
// round would time out waiting. 0 once the target's footprint is known,
// and without a body limit or a budget.
func (s *Scraper) unseenBodyCharge() int64 {
	if s.footprint.Bytes() > 0 || s.limits.MaxBodyBytes <= 0 || s.limits.Budget.Size() == 0 {
		return 0
	}
	// readBody charges a series per line as the body arrives; the shortest
	// sample line ("a 1" and its newline) is 4 bytes.
	series := (s.limits.MaxBodyBytes + 1) / 4
	if s.limits.MaxSeries > 0 {
		series = min(series, int64(s.limits.MaxSeries)+1)
	}
	return min((s.limits.MaxBodyBytes+1)*parseCostFactor+series*seriesCost, s.limits.Budget.Size())
}

// readChunk is the step in which a body's budget is charged when its size
// is not announced.
const readChunk = 64 << 10

// readBody reads r to its end, within max bytes (≤ 0: no limit), with
// budget charged for every byte before it is read: first bytes, then
// readChunk at a time; and, as the body arrives, before it is parsed, for
// a series per line (seriesCost per newline), so that what a scrape needs
// in all is found while it reads, not after. The buffer starts with room for size bytes when
// the reservation holds that many (without a budget, up to
// DefaultMaxBodyBytes: an announced size is the upstream's word).
func readBody(r io.Reader, max int64, res *reservation, first, size int64) ([]byte, error) {
	body := getBodyBuffer()
	if size > 1 && int64(cap(body)) < size && (size <= res.held || res.unlimited() && size <= DefaultMaxBodyBytes) {
		putBodyBuffer(body)
		body = make([]byte, 0, size)
	}
	charged := int64(0)
	for {
		if int64(len(body)) >= charged {
			step := int64(readChunk)
			if charged == 0 {
				step = first
			}
			// Short of room: the next attempt waits for twice what this one
			// read, so a body of unannounced size is fetched a few times at
			// most, not once per chunk.
			if err := res.take(step*parseCostFactor, 2*(res.used+step*parseCostFactor)); err != nil {
				putBodyBuffer(body)
				return nil, err
			}
			charged += step
		}
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)]
		}
		end := min(int64(cap(body)), charged)
		n, err := r.Read(body[len(body):end])
		read := body[len(body) : len(body)+n]
		body = body[:len(body)+n]
		if max > 0 && int64(len(body)) > max {
			putBodyBuffer(body)
			return nil, fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, max)
		}
		if lines := int64(bytes.Count(read, []byte{'\n'})); lines > 0 {
			if err := res.take(lines*seriesCost, 2*(res.used+lines*seriesCost)); err != nil {
				putBodyBuffer(body)
				return nil, err
			}
		}
		if err == io.EOF {
			return body, nil
		}
		if err != nil {
			putBodyBuffer(body)
			return nil, fmt.Errorf("reading body: %w", err)
		}
	}
}

// bodyBuffers recycles scrape bodies: a replica's body is much the same
// size every scrape, and growing a fresh one to 100 kB or more by doubling
// was most of what a scrape allocated. A bounded free list, not a
// sync.Pool, which every other garbage collection empties.
var bodyBuffers = make(chan []byte, 16)

// maxPooledBody is the largest buffer kept for reuse, so idle buffers
// hold at most 16 MiB.
const maxPooledBody = 1 << 20

func getBodyBuffer() []byte {
	select {
	case b := <-bodyBuffers:
		return b[:0]
	default:
		return nil
	}
}

// putBodyBuffer returns a body to the free list; nothing may refer to it
// after.
func putBodyBuffer(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledBody {
		return
	}
	select {
	case bodyBuffers <- b[:0]:
	default:
	}
}

// responseFormat maps a response's Content-Type to the text format to
// parse. A missing or unknown type is read as the classic text format, as
// Prometheus does by default; protobuf, which was not asked for, is an
// error.
func responseFormat(contentType string) (expfmt.Format, error) {
	if strings.Contains(contentType, "protobuf") {
		return "", fmt.Errorf("unsupported content type %q: only the text formats are parsed", contentType)
	}
	if mt, _, _ := mime.ParseMediaType(contentType); mt == "application/openmetrics-text" {
		return openMetricsFormat, nil
	}
	return textPlainFormat, nil
}

// The formats responseFormat returns, made once: a Format is a string that
// FormatType splits anew on every call.
var (
	openMetricsFormat = expfmt.NewFormat(expfmt.TypeOpenMetrics)
	textPlainFormat   = expfmt.NewFormat(expfmt.TypeTextPlain)
)

// parse reads a body in its format, keeping what want needs (everything
// when want is nil).
func parse(body []byte, format expfmt.Format, want *wantedNames) (familyIndexInput, error) {
	if format == openMetricsFormat {
		return parseOpenMetrics(body, want)
	}
	if want != nil {
		in, err := scanText(body, want)
		if !errors.Is(err, errScanFallback) {
			return in, err
		}
		// The scanner met what it leaves to expfmt: expfmt reads the
		// whole body, with its own errors.
	}
	families, err := ParseText(bytes.NewReader(body))
	return familyIndexInput{families: families}, err
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

// redact hides a password, and every query parameter's value (tokens are
// often passed as ?token=…), in target for errors and logs.
func redact(target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"xxxxx"}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// redactURLError redacts the URL a *url.Error carries: the HTTP client's
// errors quote the whole request URL, query string included.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redact(ue.URL)
	}
	return err
}
