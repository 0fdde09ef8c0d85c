package probe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	commonconfig "github.com/prometheus/common/config"

	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/openai"
)

// DefaultMaxBodyBytes bounds a probe's response: a 16-token stream is a few
// kilobytes, so a megabyte means the server is not answering the probe.
const DefaultMaxBodyBytes = 1 << 20

// Client sends one small streaming completion and measures it from the
// client's side. It builds its own http.Client, so the redirect policy
// (same scheme and host only) cannot be lost by a caller's client.
type Client struct {
	API          config.ProbeAPI // completions (default) or chat
	PromptTokens int             // approximate prompt length
	MaxTokens    int             // max_tokens asked for
	IgnoreEOS    bool            // send ignore_eos, so every probe generates MaxTokens
	Timeout      time.Duration   // of the whole probe, stream included; 0 means none
	UserAgent    string          // default "kneewatch-probe"
	MaxBodyBytes int64           // default DefaultMaxBodyBytes
	// Transport sends the requests; nil means a clone of
	// http.DefaultTransport with keep-alives off (see newTransport).
	Transport http.RoundTripper
}

// Request is one probe of one replica.
type Request struct {
	BaseURL string              // the OpenAI-compatible base URL, e.g. http://h:8000/v1
	Model   string              // sent as "model"; empty leaves it out (the server's only model)
	APIKey  commonconfig.Secret // sent as a bearer token when set; never logged
}

// Result is what one probe measured. Durations count from the moment the
// request was handed to the transport, so TTFT includes connecting, as a
// user's first request does.
type Result struct {
	Start        time.Time
	TTFT         time.Duration // to the first output token; 0 when none arrived
	TPOT         time.Duration // (last − first token time) ÷ (tokens − 1); 0 when unknown (fewer than 2 tokens or one chunk)
	E2E          time.Duration // to the end of the stream, or to the failure
	StatusCode   int           // 0 when no response arrived
	OutputTokens int           // the usage's completion_tokens, else the content chunks counted
	PromptTokens int           // the usage's prompt_tokens; 0 when the server sent none
	Class        Class         // empty on success
	Err          error         // why it failed; nil on success
	// Canceled is true when the caller's context ended first (shutdown):
	// the result is not a measurement of the replica.
	Canceled bool
}

// OK reports whether the probe streamed at least one token and ended cleanly.
func (r Result) OK() bool { return r.Class == "" && !r.Canceled }

// Probe sends one streaming request to req.BaseURL and reads the stream.
func (c *Client) Probe(ctx context.Context, req Request) Result {
	parent := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	res := Result{Start: time.Now()}
	oreq, err := c.request(req.Model)
	if err != nil {
		return failed(res, ClassBadStream, err)
	}
	var connected atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
	})
	hreq, err := oreq.HTTPRequest(ctx, req.BaseURL, string(req.APIKey))
	if err != nil {
		return failed(res, ClassConnect, fmt.Errorf("building the request: %w", err))
	}
	hreq.Header.Set("User-Agent", cmp.Or(c.UserAgent, "kneewatch-probe"))

	res.Start = time.Now()
	resp, err := c.httpClient().Do(hreq)
	if err != nil {
		res.E2E = time.Since(res.Start)
		if resp != nil {
			res.StatusCode = resp.StatusCode
		}
		return c.transportFailure(parent, ctx, res, err, connected.Load())
	}
	defer resp.Body.Close()
	res.StatusCode = resp.StatusCode
	if class, err := statusFailure(resp); err != nil {
		res.E2E = time.Since(res.Start)
		return failed(res, class, err)
	}
	if err := openai.CheckEventStream(resp); err != nil {
		res.E2E = time.Since(res.Start)
		return failed(res, ClassBadStream, err)
	}
	body2 := &limitedReader{r: resp.Body, left: cmp.Or(c.MaxBodyBytes, DefaultMaxBodyBytes)}
	err = readStream(body2, &res)
	res.E2E = time.Since(res.Start)
	if body2.exceeded {
		// The scanner hands over the cut line before the read error.
		err = fmt.Errorf("%w (%d bytes)", errBodyTooLarge, cmp.Or(c.MaxBodyBytes, DefaultMaxBodyBytes))
	}
	if err != nil {
		if ctx.Err() != nil {
			return c.transportFailure(parent, ctx, res, err, true)
		}
		return failed(res, ClassBadStream, err)
	}
	if res.OutputTokens == 0 {
		return failed(res, ClassEmpty, errors.New("the stream ended without any output token"))
	}
	return res
}

func failed(res Result, class Class, err error) Result {
	res.Class, res.Err = class, err
	return res
}

// transportFailure classifies an error from sending the request or reading
// the stream: the caller's cancellation is no measurement; the probe's own
// timeout is connect before a connection was made, timeout after.
func (c *Client) transportFailure(parent, ctx context.Context, res Result, err error, connected bool) Result {
	switch {
	case parent.Err() != nil:
		res.Canceled, res.Err = true, err
		return res
	case errors.Is(err, errRedirectRefused):
		return failed(res, ClassRedirect, err)
	case !connected:
		return failed(res, ClassConnect, err)
	case ctx.Err() != nil:
		return failed(res, ClassTimeout, fmt.Errorf("no complete stream within %s (%d tokens so far): %w", c.Timeout, res.OutputTokens, err))
	default:
		// Connected, then the connection broke before a whole response.
		return failed(res, ClassBadStream, err)
	}
}

// statusFailure classifies a response that is not 200 OK. The error's
// excerpt of the body is the server's text, so the runner redacts the API
// key from it.
func statusFailure(resp *http.Response) (Class, error) {
	err := openai.CheckStatus(resp)
	if err == nil {
		return "", nil
	}
	switch code := resp.StatusCode; {
	case code >= 500:
		return ClassHTTP5xx, err
	case code >= 400:
		return ClassHTTP4xx, err
	case code >= 300:
		return ClassRedirect, fmt.Errorf("HTTP %d redirect not followed (Location %q)", code, resp.Header.Get("Location"))
	default:
		return ClassBadStream, err
	}
}

// request is the probe's completion: always streamed, with the usage asked for.
func (c *Client) request(model string) (openai.Request, error) {
	r := openai.Request{
		Model:     model,
		Prompt:    Prompt(c.PromptTokens),
		MaxTokens: c.MaxTokens,
		IgnoreEOS: c.IgnoreEOS,
		Stream:    true,
	}
	switch c.API {
	case config.ProbeAPIChat:
		r.Chat = true
	case config.ProbeAPICompletions, "":
	default:
		return r, fmt.Errorf("unknown probe API %q (want completions or chat)", c.API)
	}
	return r, nil
}

func (c *Client) httpClient() *http.Client {
	tr := c.Transport
	if tr == nil {
		tr = newTransport()
	}
	return &http.Client{Transport: tr, CheckRedirect: sameOriginRedirects}
}

// newTransport is http.DefaultTransport without keep-alives: probes are
// seconds apart, engines' API servers close idle connections after a few
// seconds (uvicorn's default is 5 s), and a POST on a connection the server
// is closing fails without a retry. A fresh connection per probe also makes
// every probe pay the same connect cost.
func newTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	tr.MaxResponseHeaderBytes = 64 << 10
	return tr
}
