package config

import (
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// URL is an absolute URL from the config file. It prints with any password
// masked, so logging a target never leaks one; use u.URL.String() for the
// request itself.
type URL struct {
	*url.URL
}

// ParseURL parses s; it is meant for tests and for code that builds a Config.
func ParseURL(s string) (URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return URL{}, err
	}
	return URL{u}, nil
}

// IsZero reports whether no URL was given; YAML's omitempty uses it.
func (u URL) IsZero() bool { return u.URL == nil }

// String returns the URL with any password replaced by "xxxxx".
func (u URL) String() string {
	if u.URL == nil {
		return ""
	}
	return u.URL.Redacted()
}

// UnmarshalYAML parses the URL; a malformed one is an error naming its line.
func (u *URL) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return strictyaml.ErrorAt(n, "want a URL, got a %s", strictyaml.KindName(n))
	}
	if n.Value == "" {
		*u = URL{}
		return nil
	}
	p, err := url.Parse(n.Value)
	if err != nil {
		if !strings.Contains(n.Value, "://") {
			return strictyaml.ErrorAt(n, "not a URL: it needs a scheme, as in http://host:port/path")
		}
		// url.Error repeats the whole URL, which may hold a password; keep only the reason.
		reason := err
		if ue, ok := err.(*url.Error); ok {
			reason = ue.Err
		}
		return strictyaml.ErrorAt(n, "not a URL: %v", reason)
	}
	*u = URL{p}
	return nil
}

// MarshalYAML writes the URL with any password masked.
func (u URL) MarshalYAML() (any, error) {
	if u.URL == nil {
		return nil, nil
	}
	return u.String(), nil
}

// validateHTTPURL checks that u is an absolute http or https URL with a host
// and without credentials, which belong in http_client where they are masked.
func validateHTTPURL(u URL, path string, p *strictyaml.List) {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		p.Add(path, "%q is not an http:// or https:// URL", u.String())
	case u.Host == "":
		p.Add(path, "%q has no host", u.String())
	case u.User != nil:
		p.Add(path, "%s carries credentials; put them in http_client (basic_auth with password_file, or authorization) instead", u.String())
	case u.Fragment != "":
		p.Add(path, "%q has a #fragment, which HTTP requests never send", u.String())
	}
}
