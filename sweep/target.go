package sweep

import (
	"fmt"
	"net/url"
	"strings"
)

// APIBase turns a --target into the OpenAI API base the client posts
// under: a bare server URL ("http://host:8000" or ".../") gets "/v1"
// appended, any other path is taken as the API base as given (some
// gateways serve the API under a prefix). Only http and https are accepted.
func APIBase(target string) (string, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("--target %q: want an http:// or https:// URL, e.g. http://127.0.0.1:8000", target)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("--target %q: want an http:// or https:// URL, e.g. http://127.0.0.1:8000", target)
	}
	if u.Host == "" {
		return "", fmt.Errorf("--target %q: no host", target)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1"
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return u.String(), nil
}

// GuessMetricsURL is where an engine that serves its metrics beside its API
// (vLLM, SGLang, TGI, the simulator) has them: /metrics at the API base's
// host.
func GuessMetricsURL(apiBase string) string {
	u, err := url.Parse(apiBase)
	if err != nil {
		return ""
	}
	u.Path, u.RawQuery, u.Fragment = "/metrics", "", ""
	return u.String()
}

// Redact hides a password in a URL for logs and reports.
func Redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return u.Redacted()
}
