// Package sweep drives an OpenAI-compatible endpoint with closed-loop load
// (a fixed number of requests always in flight) and measures, per request,
// the client-side TTFT, TPOT and token counts. `kneewatch sweep` uses it to
// measure a replica's knee; the demo uses it to load the simulated fleet.
package sweep

import (
	"context"
	"errors"
	"github.com/kneewatch/kneewatch/openai"
	"github.com/kneewatch/kneewatch/workload"
	"io"
	"net/http"
	"time"
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
	// workload.PromptOfTokens; the sweep uses workload.UniquePrompts).
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

// Do sends one request and waits for its whole response.
func (c *Client) Do(ctx context.Context, req Request) Result {
	res := Result{Request: req, Start: time.Now()}
	promptOf := c.Prompt
	if promptOf == nil {
		promptOf = workload.PromptOfTokens
	}
	oreq := openai.Request{
		Model:     c.Model,
		Prompt:    promptOf(req.PromptTokens),
		Chat:      c.Chat,
		MaxTokens: req.MaxTokens,
		IgnoreEOS: true,
		Stream:    c.Stream,
	}
	hreq, err := oreq.HTTPRequest(ctx, c.BaseURL, c.APIKey)
	if err != nil {
		res.Err = err
		return res
	}
	res.Start = time.Now()
	resp, err := c.httpClient().Do(hreq)
	if err != nil {
		res.Err = err
		return res
	}
	defer resp.Body.Close()
	res.StatusCode = resp.StatusCode
	if err := openai.CheckStatus(resp); err != nil {
		res.Err = err
		res.E2E = time.Since(res.Start)
		return res
	}
	if !c.Stream {
		u, err := openai.ReadUsage(resp.Body)
		res.PromptTokens, res.OutputTokens, res.Err = u.PromptTokens, u.CompletionTokens, err
	} else if res.Err = openai.CheckEventStream(resp); res.Err == nil {
		res.Err = readStream(resp.Body, &res)
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

// ErrNoTokens means a response came back with zero output tokens. The other
// errors a request can end with besides transport errors are openai's: an
// *openai.HTTPError (an answer that is not 200 OK), openai.ErrNotStreaming,
// openai.ErrNoUsage, openai.ErrBadUsage, openai.ErrNoDone, and a malformed or
// error chunk.
var ErrNoTokens = errors.New("the response has zero output tokens")

// readStream reads the stream to data: [DONE], stamping TTFT at the first
// chunk with an output token (reasoning included: openai.Chunk.Token) and
// taking the token counts from the usage chunk, which the sweep requires.
// Only the first token is timed, so the chunks after it are passed over
// undecoded: the client's cost per token stays a line scan.
func readStream(r io.Reader, res *Result) error {
	s := openai.NewStream(r)
	s.SkipAfterFirstToken = true
	for s.Next() {
		c := s.Chunk()
		if c.Token && res.TTFT == 0 {
			res.TTFT = time.Since(res.Start)
		}
		if c.Usage != nil {
			// The profile's rates and TPOT come from these counts.
			if err := c.Usage.Check(); err != nil {
				return err
			}
			res.PromptTokens, res.OutputTokens = c.Usage.PromptTokens, c.Usage.CompletionTokens
		}
	}
	if err := s.Err(); err != nil {
		return err
	}
	if res.OutputTokens == 0 && res.PromptTokens == 0 {
		return openai.ErrNoUsage
	}
	return nil
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
