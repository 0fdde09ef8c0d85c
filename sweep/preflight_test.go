package sweep

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/workload"
)

// fakeServer is an OpenAI-compatible endpoint whose answers a test chooses;
// it counts completion requests, so a test can prove no load was sent.
type fakeServer struct {
	models      string // body of GET /v1/models; "" answers 404
	completions http.HandlerFunc
	posts       atomic.Int64
}

func (f *fakeServer) start(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		if f.models == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, f.models)
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		f.posts.Add(1)
		f.completions(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func streamOf(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
		}
	}
}

const modelList = `{"object":"list","data":[{"id":"served-model","object":"model"}]}`

var goodStream = streamOf(textChunk, textChunk, textChunk, `{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":8}}`, "[DONE]")

func preflightConfig(url, model string) Config {
	return Config{
		Client:   &Client{BaseURL: url, Model: model, Stream: true},
		Workload: resolveChat(),
		SLO:      knee.SLO{TTFT: knee.Duration(1e9), TPOT: knee.Duration(1e8), Quantile: 0.99},
	}
}

func TestBadTargetsFailBeforeAnyLoad(t *testing.T) {
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr + "/v1"
	}
	for _, tc := range []struct {
		name   string
		server *fakeServer // nil: nothing listens
		model  string
		want   string
	}{
		{"an unreachable target", nil, "served-model", "is unreachable"},
		{"a model the server does not serve", &fakeServer{models: modelList, completions: goodStream}, "other-model",
			`model "other-model" is not served by`},
		{"a server that answers streaming requests with JSON", &fakeServer{models: modelList, completions: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"choices":[{"text":"hi"}],"usage":{"prompt_tokens":16,"completion_tokens":8}}`)
		}}, "served-model", "did not stream the response as server-sent events"},
		{"zero tokens back", &fakeServer{models: modelList, completions: streamOf(`{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":0}}`, "[DONE]")},
			"served-model", "zero output tokens came back"},
		{"a stream without usage", &fakeServer{models: modelList, completions: streamOf(textChunk, "[DONE]")},
			"served-model", "needs a server that honours stream_options.include_usage"},
		{"a refused API key", &fakeServer{models: modelList, completions: func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "bad key", http.StatusUnauthorized)
		}}, "served-model", "was refused (HTTP 401)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := closed()
			if tc.server != nil {
				url = tc.server.start(t)
			}
			out, err := Run(context.Background(), preflightConfig(url, tc.model))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if out != nil {
				t.Errorf("an outcome with %d levels came back", len(out.Levels))
			}
			if tc.server != nil && tc.server.posts.Load() > 1 {
				t.Errorf("%d completion requests were sent; only the probe may be", tc.server.posts.Load())
			}
		})
	}
}

func TestPreflightWarnsWhenItCannotListModels(t *testing.T) {
	f := &fakeServer{completions: goodStream}
	cfg := preflightConfig(f.start(t), "served-model")
	tgt, err := Preflight(context.Background(), cfg.Client, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(tgt.Warnings) != 1 || !strings.Contains(tgt.Warnings[0], "no GET /v1/models") {
		t.Errorf("warnings %q, want one about /v1/models", tgt.Warnings)
	}
	if tgt.Probe.OutputTokens != 8 {
		t.Errorf("probe got %d tokens, want 8", tgt.Probe.OutputTokens)
	}
}

func TestPreflightReadsTheEngineAndGPUFromTheSimulator(t *testing.T) {
	st := startSim(t, "llama-3.1-8b-h100", 50)
	tgt, err := Preflight(context.Background(), st.client(4), st.metrics(0), false)
	if err != nil {
		t.Fatal(err)
	}
	if tgt.Engine != "vllm" || tgt.GPU != "NVIDIA H100 80GB HBM3" {
		t.Errorf("engine %q, GPU %q; want vllm on an NVIDIA H100 80GB HBM3", tgt.Engine, tgt.GPU)
	}
	if len(tgt.Models) != 1 || tgt.Models[0] != st.preset.Model {
		t.Errorf("models %q, want [%s]", tgt.Models, st.preset.Model)
	}
}

func TestAGuessedMetricsURLThatFailsIsDroppedWithAWarning(t *testing.T) {
	f := &fakeServer{models: modelList, completions: goodStream}
	url := f.start(t)
	m := &Metrics{Scraper: newScraper(), EngineURL: GuessMetricsURL(url)}
	tgt, err := Preflight(context.Background(), &Client{BaseURL: url, Model: "served-model", Stream: true, Prompt: workload.UniquePrompts()}, m, true)
	if err != nil {
		t.Fatal(err)
	}
	if m.EngineURL != "" {
		t.Errorf("the unreadable guessed URL is still used: %q", m.EngineURL)
	}
	if len(tgt.Warnings) != 1 || !strings.Contains(tgt.Warnings[0], "give --metrics-url") {
		t.Errorf("warnings %q", tgt.Warnings)
	}
	// Given explicitly, the same failure is an error.
	m.EngineURL = GuessMetricsURL(url)
	if _, err := Preflight(context.Background(), &Client{BaseURL: url, Model: "served-model", Stream: true, Prompt: workload.UniquePrompts()}, m, false); err == nil || !strings.Contains(err.Error(), "--metrics-url") {
		t.Errorf("error %v, want one naming --metrics-url", err)
	}
}

func TestAPIBaseAddsV1ToABareHost(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000/v1", ""},
		{"http://127.0.0.1:8000/", "http://127.0.0.1:8000/v1", ""},
		{"https://gw.example/openai/v1/", "https://gw.example/openai/v1", ""},
		{"127.0.0.1:8000", "", "want an http:// or https:// URL"},
		{"http://", "", "no host"},
	} {
		got, err := APIBase(tc.in)
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("APIBase(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
	if got := GuessMetricsURL("http://h:8000/v1"); got != "http://h:8000/metrics" {
		t.Errorf("GuessMetricsURL = %q", got)
	}
}
