package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/openai"
)

// Target is what the preflight learned about the endpoint before any load.
type Target struct {
	// Models the server lists on GET /v1/models (nil when it has no such endpoint).
	Models []string
	// Engine is the metrics adapter that read --metrics-url ("" when not read).
	Engine string
	// GPU is the DCGM modelName of the replica's GPU ("" when not read).
	GPU string
	// Probe is the single request sent to check the endpoint.
	Probe Result
	// Warnings are things the sweep can live with but a user should know.
	Warnings []string
}

// probeRequest is the preflight's one request: small, so a cold server
// answers it quickly, with two or more output tokens so TPOT is defined.
var probeRequest = Request{PromptTokens: 16, MaxTokens: 8}

// probeTimeout bounds the probe request: long enough for a server that
// compiles or loads on its first request.
const probeTimeout = 2 * time.Minute

// Preflight checks the endpoint before any load is sent: it answers, it
// serves the model, it streams server-sent events with usage, and it sends
// tokens back; and the metrics endpoints, when given, are readable by the
// watcher's adapters. Each failure is an error saying what is wrong.
// When guessedMetrics is set, m.EngineURL was not given by the user: if it
// cannot be read it is dropped (set to "") with a warning instead.
func Preflight(ctx context.Context, client *Client, m *Metrics, guessedMetrics bool) (Target, error) {
	var t Target
	models, err := listModels(ctx, client)
	switch {
	case errors.Is(err, errNoModelsEndpoint):
		t.Warnings = append(t.Warnings, "the server has no GET /v1/models, so the model name was not checked before the probe")
	case err != nil:
		return t, err
	default:
		t.Models = models
		if !slices.Contains(models, client.Model) {
			return t, fmt.Errorf("model %q is not served by %s; it serves: %s", client.Model, client.BaseURL, strings.Join(models, ", "))
		}
	}

	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	t.Probe = client.Do(pctx, probeRequest)
	if err := probeError(client, t.Probe); err != nil {
		return t, err
	}
	if t.Probe.OutputTokens < probeRequest.MaxTokens {
		t.Warnings = append(t.Warnings, fmt.Sprintf(
			"the probe asked for %d output tokens with ignore_eos and got %d: this server stops at end-of-sequence, so output lengths follow the model rather than the workload mix",
			probeRequest.MaxTokens, t.Probe.OutputTokens))
	}

	if m != nil && m.EngineURL != "" {
		snap, err := m.Scraper.Scrape(ctx, m.EngineURL, m.Engine)
		switch {
		case err != nil && guessedMetrics:
			t.Warnings = append(t.Warnings, fmt.Sprintf("no engine metrics at %s (%v): KV usage, running/waiting and preemptions are not measured; give --metrics-url", m.EngineURL, err))
			m.EngineURL = ""
		case err != nil:
			return t, fmt.Errorf("--metrics-url: %w", err)
		default:
			t.Engine = snap.Engine
			if _, ok := snap.Gauge(collector.SignalKVUsage); !ok {
				t.Warnings = append(t.Warnings, fmt.Sprintf("the %s metrics at %s carry no KV-cache usage; the limiting resource will be judged on preemptions alone", snap.Engine, m.EngineURL))
			}
		}
	}
	if m != nil && m.DCGMURL != "" {
		d, err := m.Scraper.ScrapeDCGM(ctx, m.DCGMURL)
		if err != nil {
			return t, fmt.Errorf("--dcgm-url: %w", err)
		}
		gpus := d.Select(m.GPUs)
		if len(gpus) == 0 {
			return t, fmt.Errorf("--dcgm-url: none of the %d GPUs on %s matches the GPU selector", len(d.GPUs), m.DCGMURL)
		}
		t.GPU = gpus[0].Labels.ModelName
	}
	return t, nil
}

// probeError explains why the probe cannot start a sweep, or returns nil.
func probeError(client *Client, r Result) error {
	var herr *openai.HTTPError
	switch {
	case r.Err == nil && r.TTFT <= 0:
		return fmt.Errorf("probe request to %s: %d tokens came back but no content chunk arrived before [DONE], so TTFT cannot be measured", client.BaseURL, r.OutputTokens)
	case r.Err == nil:
		return nil
	case errors.As(r.Err, &herr) && (herr.Code == http.StatusUnauthorized || herr.Code == http.StatusForbidden):
		return fmt.Errorf("probe request to %s was refused (HTTP %d): check --api-key-file or the API key variable", client.BaseURL, herr.Code)
	case errors.As(r.Err, &herr) && herr.Code == http.StatusNotFound:
		return fmt.Errorf("probe request to %s: HTTP 404 (%s): is the model %q served, and is the target the API base (…/v1)?", client.BaseURL, herr.Body, client.Model)
	case errors.Is(r.Err, openai.ErrNotStreaming):
		return fmt.Errorf("probe request to %s: %w; the sweep needs a streaming (SSE) endpoint to measure TTFT", client.BaseURL, r.Err)
	case errors.Is(r.Err, openai.ErrNoUsage):
		return fmt.Errorf("probe request to %s: %w; the sweep takes token counts from usage and needs a server that honours stream_options.include_usage", client.BaseURL, r.Err)
	case errors.Is(r.Err, ErrNoTokens):
		return fmt.Errorf("probe request to %s: zero output tokens came back, so there is nothing to measure", client.BaseURL)
	}
	return fmt.Errorf("probe request to %s: %w", client.BaseURL, r.Err)
}

var errNoModelsEndpoint = errors.New("no /v1/models endpoint")

// listModels reads GET /models under the API base.
func listModels(ctx context.Context, client *Client) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	url := strings.TrimRight(client.BaseURL, "/") + "/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("target %q: %w", client.BaseURL, err)
	}
	if client.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+client.APIKey)
	}
	resp, err := client.httpClient().Do(req)
	if err != nil {
		return nil, fmt.Errorf("target %s is unreachable: %w", client.BaseURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the body: %w", url, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return nil, errNoModelsEndpoint
	case http.StatusUnauthorized, http.StatusForbidden:
		return nil, fmt.Errorf("GET %s was refused (HTTP %d): check --api-key-file or the API key variable", url, resp.StatusCode)
	default:
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", url, resp.StatusCode, strings.TrimSpace(string(body[:min(len(body), 512)])))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("GET %s: not an OpenAI model list: %w", url, err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}
