package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kneewatch/kneewatch/config"
)

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, data string) {
	fmt.Fprintf(w, "data: %s\n\n", data)
	w.(http.Flusher).Flush()
}

func streamHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
}

// tokens streams n completion tokens, gap apart, then usage and [DONE].
func tokens(n int, gap time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		for range n {
			time.Sleep(gap)
			sse(w, `{"choices":[{"text":" the"}]}`)
		}
		sse(w, fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":%d}}`, n))
		sse(w, "[DONE]")
	}
}

// drained reads the request body before h runs, as an API server does;
// only then does Go's server notice a client that hangs up.
func drained(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h(w, r)
	}
}

func TestProbesAreClassifiedByWhatTheServerDid(t *testing.T) {
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		wantClass Class
		wantCode  int
		wantErr   string // a substring of the error
	}{
		{"a clean stream of tokens is a success", tokens(4, time.Millisecond), "", 200, ""},
		{"a chat stream whose first chunk only names the role is a success", func(w http.ResponseWriter, r *http.Request) {
			streamHeaders(w)
			sse(w, `{"choices":[{"delta":{"role":"assistant"}}]}`)
			sse(w, `{"choices":[{"delta":{"content":" a"}}]}`)
			sse(w, `{"choices":[{"delta":{"content":" b"}}]}`)
			sse(w, "[DONE]")
		}, "", 200, ""},
		{"reasoning tokens count as output", func(w http.ResponseWriter, r *http.Request) {
			streamHeaders(w)
			sse(w, `{"choices":[{"delta":{"reasoning_content":"hm"}}]}`)
			sse(w, "[DONE]")
		}, "", 200, ""},
		{"an HTTP 500 is http_5xx", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"message":"boom"}}`, http.StatusInternalServerError)
		}, ClassHTTP5xx, 500, "HTTP 500"},
		{"an HTTP 503 is http_5xx", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		}, ClassHTTP5xx, 503, "overloaded"},
		{"an HTTP 401 is http_4xx", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "bad key", http.StatusUnauthorized)
		}, ClassHTTP4xx, 401, "HTTP 401"},
		{"an unknown model (404) is http_4xx", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no such model", http.StatusNotFound)
		}, ClassHTTP4xx, 404, "no such model"},
		{"a redirect without a location is not followed", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusFound)
		}, ClassRedirect, 302, "redirect not followed"},
		{"a stream that stops sending tokens is a timeout", func(w http.ResponseWriter, r *http.Request) {
			streamHeaders(w)
			sse(w, `{"choices":[{"text":" the"}]}`)
			<-r.Context().Done()
		}, ClassTimeout, 200, "1 tokens so far"},
		{"a server that never answers is a timeout", func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, ClassTimeout, 0, "no complete stream within"},
		{"a chunk that is not JSON is bad_stream", func(w http.ResponseWriter, r *http.Request) {
			streamHeaders(w)
			sse(w, `{"choices":[{"text":" the"}]}`)
			sse(w, `{not json`)
		}, ClassBadStream, 200, "stream chunk 2 is not JSON"},
		{"a stream cut before [DONE] is bad_stream", func(w http.ResponseWriter, r *http.Request) {
			streamHeaders(w)
			sse(w, `{"choices":[{"text":" the"}]}`)
		}, ClassBadStream, 200, "without data: [DONE]"},
		{"an error event inside the stream is bad_stream", func(w http.ResponseWriter, r *http.Request) {
			streamHeaders(w)
			sse(w, `{"error":{"message":"engine died","code":500}}`)
			sse(w, "[DONE]")
		}, ClassBadStream, 200, "engine died"},
		{"a JSON answer to a streaming request is bad_stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"choices":[{"text":" the"}]}`)
		}, ClassBadStream, 200, "not an event stream"},
		{"a body past the size limit is bad_stream", func(w http.ResponseWriter, r *http.Request) {
			streamHeaders(w)
			for range 200 {
				sse(w, `{"choices":[{"text":"`+strings.Repeat("x", 1000)+`"}]}`)
			}
			sse(w, "[DONE]")
		}, ClassBadStream, 200, "size limit"},
		{"a clean stream without a token is empty", func(w http.ResponseWriter, r *http.Request) {
			streamHeaders(w)
			sse(w, `{"choices":[{"text":""}]}`)
			sse(w, `{"choices":[],"usage":{"completion_tokens":0}}`)
			sse(w, "[DONE]")
		}, ClassEmpty, 200, "without any output token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(drained(tt.handler))
			defer srv.Close()
			c := &Client{PromptTokens: 8, MaxTokens: 4, Timeout: 300 * time.Millisecond, MaxBodyBytes: 64 << 10}
			res := c.Probe(context.Background(), Request{BaseURL: srv.URL + "/v1"})
			if res.Class != tt.wantClass || res.StatusCode != tt.wantCode {
				t.Fatalf("class %q, status %d (err %v); want %q, %d", res.Class, res.StatusCode, res.Err, tt.wantClass, tt.wantCode)
			}
			if tt.wantClass == "" {
				if res.Err != nil || !res.OK() || res.TTFT <= 0 || res.OutputTokens < 1 || res.E2E < res.TTFT {
					t.Errorf("success with err %v, ttft %v, e2e %v, tokens %d", res.Err, res.TTFT, res.E2E, res.OutputTokens)
				}
				return
			}
			if res.OK() || res.Err == nil || !strings.Contains(res.Err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one containing %q", res.Err, tt.wantErr)
			}
		})
	}
}

func TestAProbeThatCannotConnectIsConnect(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now

	blackhole := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done() // a host that drops SYNs
		return nil, ctx.Err()
	}}
	tests := []struct {
		name      string
		transport http.RoundTripper
	}{
		{"a refused connection", nil},
		{"a connection attempt that outlasts the timeout", blackhole},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Client{PromptTokens: 8, MaxTokens: 4, Timeout: 200 * time.Millisecond, Transport: tt.transport}
			res := c.Probe(context.Background(), Request{BaseURL: "http://" + addr + "/v1"})
			if res.Class != ClassConnect || res.StatusCode != 0 {
				t.Errorf("class %q status %d (err %v), want connect with no status", res.Class, res.StatusCode, res.Err)
			}
		})
	}
}

func TestAProbeMeasuresTTFTAndTPOTFromTheStream(t *testing.T) {
	const gap = 20 * time.Millisecond
	srv := httptest.NewServer(tokens(5, gap))
	defer srv.Close()
	c := &Client{PromptTokens: 8, MaxTokens: 5, Timeout: 2 * time.Second}
	res := c.Probe(context.Background(), Request{BaseURL: srv.URL + "/v1"})
	if !res.OK() {
		t.Fatalf("probe failed: %s %v", res.Class, res.Err)
	}
	// The first token comes one gap after the request, each next one a gap later.
	if res.TTFT < gap || res.TTFT > gap+15*time.Millisecond {
		t.Errorf("TTFT %v, want about %v", res.TTFT, gap)
	}
	if res.TPOT < gap-2*time.Millisecond || res.TPOT > gap+10*time.Millisecond {
		t.Errorf("TPOT %v, want about %v", res.TPOT, gap)
	}
	if res.PromptTokens != 16 {
		t.Errorf("prompt tokens %d, want the usage's 16", res.PromptTokens)
	}
	if res.OutputTokens != 5 || res.E2E < res.TTFT+4*gap {
		t.Errorf("tokens %d, e2e %v", res.OutputTokens, res.E2E)
	}
}

func TestAProbeAsksForASmallStreamingCompletion(t *testing.T) {
	type seen struct {
		path, auth, agent string
		body              map[string]any
	}
	tests := []struct {
		name     string
		api      config.ProbeAPI
		wantPath string
	}{
		{"completions", config.ProbeAPICompletions, "/v1/completions"},
		{"chat", config.ProbeAPIChat, "/v1/chat/completions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan seen, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var body map[string]any
				_ = json.NewDecoder(r.Body).Decode(&body)
				got <- seen{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("User-Agent"), body}
				tokens(2, 0)(w, r)
			}))
			defer srv.Close()
			c := &Client{API: tt.api, PromptTokens: 12, MaxTokens: 7, IgnoreEOS: true, Timeout: time.Second}
			res := c.Probe(context.Background(), Request{BaseURL: srv.URL + "/v1/", Model: "m", APIKey: "k1"})
			if !res.OK() {
				t.Fatalf("probe failed: %s %v", res.Class, res.Err)
			}
			s := <-got
			prompt, _ := s.body["prompt"].(string)
			if msgs, ok := s.body["messages"].([]any); ok && len(msgs) == 1 {
				prompt, _ = msgs[0].(map[string]any)["content"].(string)
			}
			want := seen{tt.wantPath, "Bearer k1", "kneewatch-probe", nil}
			if diff := cmp.Diff(want, seen{s.path, s.auth, s.agent, nil}, cmp.AllowUnexported(seen{})); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			if len(strings.Fields(prompt)) != 12 || s.body["model"] != "m" || s.body["max_tokens"] != 7.0 ||
				s.body["stream"] != true || s.body["ignore_eos"] != true {
				t.Errorf("body %v, want a 12-word prompt, model m, max_tokens 7, stream and ignore_eos", s.body)
			}
		})
	}
}

func TestRedirectsToAnotherHostAreNotFollowed(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		tokens(2, 0)(w, r)
	}))
	defer other.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/completions", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("POST /moved/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/v1/real", http.StatusPermanentRedirect)
	})
	mux.HandleFunc("POST /v1/real", tokens(2, 0))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	c := &Client{PromptTokens: 8, MaxTokens: 2, Timeout: time.Second}
	res := c.Probe(context.Background(), Request{BaseURL: srv.URL + "/v1", APIKey: "sk-must-stay-home"})
	if res.Class != ClassRedirect || elsewhere.Load() != 0 {
		t.Errorf("redirect to another host: class %q (err %v), the other host got %d requests; want redirect and none", res.Class, res.Err, elsewhere.Load())
	}
	res = c.Probe(context.Background(), Request{BaseURL: srv.URL + "/moved/v1"})
	if !res.OK() {
		t.Errorf("a redirect within the same host: class %q (err %v), want it followed", res.Class, res.Err)
	}
}

func TestAProbeCancelledByItsCallerIsNoMeasurement(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	c := &Client{PromptTokens: 8, MaxTokens: 2, Timeout: 5 * time.Second}
	res := c.Probe(ctx, Request{BaseURL: srv.URL + "/v1"})
	if !res.Canceled || res.OK() || res.Class != "" || !errors.Is(res.Err, context.Canceled) {
		t.Errorf("canceled %v, class %q, err %v; want canceled with no class", res.Canceled, res.Class, res.Err)
	}
}

func TestThePromptHasTheAskedNumberOfWords(t *testing.T) {
	for _, n := range []int{0, 1, 16, 100} {
		if got := len(strings.Fields(Prompt(n))); got != max(n, 1) {
			t.Errorf("Prompt(%d) has %d words", n, got)
		}
	}
}
