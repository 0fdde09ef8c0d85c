package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// exposition is a captured exposition split into lines, each sample line
// marked as cumulative (a counter, or a histogram's or summary's bucket,
// count or sum) or not, so it can be served with counters that advance and
// histograms that fill.
type exposition struct {
	lines []line
}

type line struct {
	text       string  // a comment line, or the series part of a sample
	value      float64 // the sample's captured value
	sample     bool
	cumulative bool
	// whole marks a cumulative count (a counter, a bucket, a _count):
	// engines count whole tokens and requests, so it is served rounded.
	whole bool
}

// parseExposition reads a classic text exposition. It keeps every line;
// only sample values change when served.
func parseExposition(body []byte) (*exposition, error) {
	types := map[string]string{}
	var e exposition
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		t := sc.Text()
		if strings.HasPrefix(t, "#") || strings.TrimSpace(t) == "" {
			if f := strings.Fields(t); len(f) == 4 && f[1] == "TYPE" {
				types[f[2]] = f[3]
			}
			e.lines = append(e.lines, line{text: t})
			continue
		}
		i := strings.LastIndexAny(t, " \t")
		v, err := strconv.ParseFloat(t[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %q has no value: %v", n, t, err)
		}
		name, _, _ := strings.Cut(t[:i], "{")
		c := cumulative(name, types)
		e.lines = append(e.lines, line{text: t[:i], value: v, sample: true, cumulative: c,
			whole: c && !strings.HasSuffix(name, "_sum") && v == math.Trunc(v)})
	}
	return &e, sc.Err()
}

// cumulative reports whether a sample of name only grows.
func cumulative(name string, types map[string]string) bool {
	if types[name] == "counter" {
		return true
	}
	for _, s := range []string{"_bucket", "_count", "_sum", "_total"} {
		if fam, ok := strings.CutSuffix(name, s); ok {
			switch types[fam] {
			case "histogram", "summary", "counter":
				return true
			}
		}
	}
	return false
}

// render writes the exposition with every cumulative sample scaled by
// growth (≥ 1): counters advance, and a histogram's buckets, count and sum
// grow by one factor, so buckets stay monotonic and quantiles stay put.
func (e *exposition) render(buf *bytes.Buffer, growth float64) {
	for _, l := range e.lines {
		buf.WriteString(l.text)
		if l.sample {
			v := l.value
			if l.cumulative {
				v *= growth
			}
			if l.whole {
				// Rounding a bucket's and its neighbours' counts keeps
				// them in order: rounding is monotonic.
				v = math.Round(v)
			}
			buf.WriteByte(' ')
			buf.WriteString(pythonFloat(v))
		}
		buf.WriteByte('\n')
	}
}

// pythonFloat writes v as prometheus_client (vLLM's and SGLang's
// exporter) does, Python's repr of a float: positional with at least one
// decimal ("431802.0", "103.335895") from 1e-4 up to 1e16, exponent
// notation outside.
func pythonFloat(v float64) string {
	if a := math.Abs(v); v != 0 && (a < 1e-4 || a >= 1e16) || math.IsInf(v, 0) || math.IsNaN(v) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsRune(s, '.') {
		s += ".0"
	}
	return s
}

// fleet serves n targets on loopback, each on its own port (one listener
// per replica, as real replicas are), target i serving expositions[i %
// len]. It counts scrapes by client, kneewatch or Prometheus.
type fleet struct {
	urls      []string
	listeners []net.Listener
	start     time.Time
	scrapes   map[string]*atomic.Int64
}

func startFleet(n int, expos []*exposition) (*fleet, error) {
	f := &fleet{start: time.Now(), scrapes: map[string]*atomic.Int64{"kneewatch": {}, "prometheus": {}, "other": {}}}
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			f.close()
			return nil, err
		}
		e := expos[i%len(expos)]
		offset := float64(i % 97) // replicas do not all start at one count
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f.scrapes[client(r.UserAgent())].Add(1)
			// Grow about 1% a minute: a busy replica's counters.
			growth := 1 + offset/100 + time.Since(f.start).Minutes()/100
			var buf bytes.Buffer
			e.render(&buf, growth)
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			_, _ = w.Write(buf.Bytes())
		}), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(l) }()
		f.listeners = append(f.listeners, l)
		f.urls = append(f.urls, "http://"+l.Addr().String()+"/metrics")
	}
	return f, nil
}

// client names the scraper by its User-Agent.
func client(ua string) string {
	switch {
	case strings.HasPrefix(ua, "Prometheus/"):
		return "prometheus"
	case strings.HasPrefix(strings.ToLower(ua), "kneewatch"):
		return "kneewatch"
	}
	return "other"
}

func (f *fleet) close() {
	for _, l := range f.listeners {
		l.Close()
	}
}
