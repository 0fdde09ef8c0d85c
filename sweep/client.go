// Package sweep drives an OpenAI-compatible endpoint with closed-loop load
// (a fixed number of requests always in flight) and measures, per request,
// the client-side TTFT, TPOT and token counts. `kneewatch sweep` uses it to
// measure a replica's knee; the demo uses it to load the simulated fleet.
package sweep

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/kneewatch/kneewatch/sim"
)

// Client sends completion requests to one OpenAI-compatible endpoint.
type Client struct {
	// BaseURL is the API base, e.g. "http://127.0.0.1:8000/v1".
	BaseURL string
	Model   string
	// APIKey, when set, is sent as a bearer token. It is never logged.
	APIKey string
	// Chat selects /chat/completions instead of /completions.
	Chat bool
	// Stream requests server-sent events, so TTFT can be measured.
	Stream bool
	// Prompt returns prompt text of about n tokens (nil means
	// sim.PromptOfTokens; the sweep uses UniquePrompts).
	Prompt func(n int) string
	HTTP   *http.Client
}

// Request is one request to send.
type Request struct {
	PromptTokens int
	MaxTokens    int
}

// Result is what one request measured. Durations start when the request
// was sent.
type Result struct {
	// Request is what was asked for, so token counts can be checked
	// against it (a real tokenizer counts the prompt differently; a server
	// that ignores ignore_eos stops early).
	Request      Request
	Start        time.Time
	TTFT         time.Duration // 0 when not streaming or no token arrived
	E2E          time.Duration
	PromptTokens int // from the response's usage
	OutputTokens int // from the response's usage
	StatusCode   int
	Err          error
}

// TPOT is (E2E − TTFT) ÷ (output tokens − 1), as vLLM's bench defines it;
// ok is false for fewer than two tokens or without a TTFT.
func (r Result) TPOT() (time.Duration, bool) {
	if r.Err != nil || r.OutputTokens < 2 || r.TTFT <= 0 {
		return 0, false
	}
	return (r.E2E - r.TTFT) / time.Duration(r.OutputTokens-1), true
}

type completionRequest struct {
	Model         string         `json:"model"`
	Prompt        string         `json:"prompt,omitempty"`
	Messages      []chatMessage  `json:"messages,omitempty"`
	MaxTokens     int            `json:"max_tokens"`
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
	IgnoreEOS     bool           `json:"ignore_eos,omitempty"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

type completionChunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
	// Error is how vLLM and the simulator report a failure mid-stream.
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Do sends one request and waits for its whole response.
func (c *Client) Do(ctx context.Context, req Request) Result {
	res := Result{Request: req, Start: time.Now()}
	body := completionRequest{Model: c.Model, MaxTokens: req.MaxTokens, IgnoreEOS: true}
	promptOf := c.Prompt
	if promptOf == nil {
		promptOf = sim.PromptOfTokens
	}
	prompt := promptOf(req.PromptTokens)
	path := "/completions"
	if c.Chat {
		path = "/chat/completions"
		body.Messages = []chatMessage{{Role: "user", Content: prompt}}
	} else {
		body.Prompt = prompt
	}
	if c.Stream {
		body.Stream = true
		body.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	payload, err := json.Marshal(body)
	if err != nil {
		res.Err = err
		return res
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+path, bytes.NewReader(payload))
	if err != nil {
		res.Err = err
		return res
	}
	hreq.Header.Set("Content-Type", "application/json")
	if c.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	res.Start = time.Now()
	resp, err := c.httpClient().Do(hreq)
	if err != nil {
		res.Err = err
		return res
	}
	defer resp.Body.Close()
	res.StatusCode = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		res.Err = &HTTPError{Code: resp.StatusCode, Body: strings.TrimSpace(string(msg))}
		res.E2E = time.Since(res.Start)
		return res
	}
	if c.Stream {
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			res.Err = fmt.Errorf("%w (Content-Type %q)", ErrNotStreaming, ct)
		} else {
			res.Err = c.readStream(resp.Body, &res)
		}
	} else {
		var full struct {
			Usage *usage `json:"usage"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&full); err != nil {
			res.Err = fmt.Errorf("bad response body: %w", err)
		} else if full.Usage == nil {
			res.Err = ErrNoUsage
		} else {
			res.PromptTokens, res.OutputTokens = full.Usage.PromptTokens, full.Usage.CompletionTokens
		}
	}
	res.E2E = time.Since(res.Start)
	if res.Err == nil && res.OutputTokens == 0 {
		res.Err = ErrNoTokens
	}
	return res
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP == nil {
		return http.DefaultClient
	}
	return c.HTTP
}

// Errors a request can end with besides transport and HTTP errors.
var (
	ErrNoUsage  = errors.New("the response carries no usage (token counts)")
	ErrNoTokens = errors.New("the response has zero output tokens")
	ErrNoDone   = errors.New("the stream ended without data: [DONE]")
	// ErrNotStreaming means a streaming request was answered with something
	// other than server-sent events, so TTFT cannot be measured.
	ErrNotStreaming = errors.New("the server did not stream the response as server-sent events")
)

// HTTPError is a non-200 response.
type HTTPError struct {
	Code int
	Body string
}

func (e *HTTPError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body) }

// readStream reads server-sent events until [DONE], stamping TTFT at the
// first chunk with content. Once TTFT is stamped, only chunks that can carry
// usage or an error are decoded: the token chunks in between need no
// parsing, which keeps the client's cost per token to a line scan.
func (c *Client) readStream(r io.Reader, res *Result) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if bytes.Equal(data, []byte("[DONE]")) {
			if res.OutputTokens == 0 && res.PromptTokens == 0 {
				return ErrNoUsage
			}
			return nil
		}
		if res.TTFT > 0 && !bytes.Contains(data, []byte(`"usage"`)) && !bytes.Contains(data, []byte(`"error"`)) {
			continue
		}
		var ch completionChunk
		if err := json.Unmarshal(data, &ch); err != nil {
			return fmt.Errorf("bad stream chunk: %w", err)
		}
		if ch.Error != nil {
			return fmt.Errorf("error event in the stream: %s", ch.Error.Message)
		}
		if res.TTFT == 0 {
			for _, choice := range ch.Choices {
				if choice.Text != "" || choice.Delta.Content != "" {
					res.TTFT = time.Since(res.Start)
					break
				}
			}
		}
		if ch.Usage != nil {
			res.PromptTokens, res.OutputTokens = ch.Usage.PromptTokens, ch.Usage.CompletionTokens
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return ErrNoDone
}

// NewHTTPClient returns an HTTP client for a load generator keeping up to
// maxConns connections to one host open between requests, so a closed loop
// at that concurrency reuses connections instead of opening new ones.
func NewHTTPClient(maxConns int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = maxConns
	t.MaxIdleConnsPerHost = maxConns
	return &http.Client{Transport: t}
}
