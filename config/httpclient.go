package config

import (
	"errors"
	"strings"

	commonconfig "github.com/prometheus/common/config"
	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// HTTPClient is prometheus/common's HTTP client configuration, written as in
// Prometheus scrape configs: tls_config, basic_auth (with password_file),
// authorization (with credentials_file), bearer_token_file, oauth2,
// proxy_url, follow_redirects, enable_http2, http_headers. Relative file
// paths are resolved against the config file's directory. Secrets print as
// <secret>. Build a client with commonconfig.NewClientFromConfig(h.HTTPClientConfig, name).
type HTTPClient struct {
	commonconfig.HTTPClientConfig `yaml:",inline"`
}

// DefaultHTTPClient follows redirects and allows HTTP/2, as Prometheus does.
func DefaultHTTPClient() HTTPClient {
	return HTTPClient{HTTPClientConfig: commonconfig.DefaultHTTPClientConfig}
}

// UnmarshalYAML decodes through prometheus/common (its defaults and its
// Validate) but turns its errors, which carry no position, into errors at
// the line of the http_client block.
func (h *HTTPClient) UnmarshalYAML(unmarshal func(any) error) error {
	// Only a yaml.Node value (not a pointer to one) captures position here,
	// so take the lines of the block's values to place later errors.
	var values map[string]yaml.Node
	line := 0
	if unmarshal(&values) == nil {
		for _, v := range values {
			if line == 0 || v.Line < line {
				line = v.Line
			}
		}
	}
	err := unmarshal(&h.HTTPClientConfig)
	if err == nil {
		return nil
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		// prometheus/common decodes through local types named "plain";
		// "type config.plain" would only confuse.
		for i, e := range te.Errors {
			e = strings.ReplaceAll(e, "in type config.plain", "in http_client")
			te.Errors[i] = strings.ReplaceAll(e, "into config.plain", "into http_client")
		}
		return te
	}
	return strictyaml.ErrorAt(&yaml.Node{Line: line}, "%v", err)
}
