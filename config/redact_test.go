package config

import (
	"strings"
	"testing"
)

// TestStringMasksEverySecret writes secrets in every place prometheus/common
// allows them inline and checks that the printed config shows none.
func TestStringMasksEverySecret(t *testing.T) {
	secrets := []string{"basic-pass-1", "bearer-2", "authz-3", "oauth-4", "header-5", "dcgm-pass-6", "kube-bearer-7"}
	body := `targets:
  - replica: vllm-0
    metrics_url: https://127.0.0.1:8000/metrics
    http_client:
      basic_auth:
        username: kw
        password: basic-pass-1
      http_headers:
        X-Api-Token:
          secrets: [header-5]
    dcgm:
      url: http://127.0.0.1:9400/metrics
      gpu_uuids: [GPU-1]
      http_client:
        basic_auth:
          username: kw
          password: dcgm-pass-6
  - replica: vllm-1
    metrics_url: https://127.0.0.2:8000/metrics
    http_client:
      bearer_token: bearer-2
  - replica: vllm-2
    metrics_url: https://127.0.0.3:8000/metrics
    http_client:
      authorization:
        credentials: authz-3
  - replica: vllm-3
    metrics_url: https://127.0.0.4:8000/metrics
    http_client:
      oauth2:
        client_id: kneewatch
        client_secret: oauth-4
        token_url: https://127.0.0.1:9999/token
kubernetes:
  label_selector: app=vllm
  http_client:
    bearer_token: kube-bearer-7
`
	c, err := Parse([]byte(body), "kneewatch.yml")
	if err != nil {
		t.Fatal(err)
	}
	out := c.String()
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("printed config reveals %q:\n%s", s, out)
		}
	}
	if n := strings.Count(out, "<secret>"); n != len(secrets) {
		t.Errorf("printed config has %d <secret> placeholders, want %d:\n%s", n, len(secrets), out)
	}
	// The values themselves are kept for the HTTP clients.
	if got := string(c.Targets[0].HTTPClient.BasicAuth.Password); got != "basic-pass-1" {
		t.Errorf("basic_auth password = %q, want it kept in memory", got)
	}
}
