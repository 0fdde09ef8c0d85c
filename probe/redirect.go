package probe

import (
	"errors"
	"fmt"
	"net/http"
)

// maxRedirects bounds same-origin redirects (a trailing-slash fix-up needs one).
const maxRedirects = 3

// errRedirectRefused marks a redirect a probe will not follow.
var errRedirectRefused = errors.New("redirect refused")

// sameOriginRedirects follows a redirect only to the same scheme and host
// (with port) as the probe's URL: the API key must never travel to another
// host, nor from https to http on the same one. Go's client also drops the
// Authorization header across domains, but a probe that lands elsewhere
// measures something other than the replica, so it is refused outright.
func sameOriginRedirects(req *http.Request, via []*http.Request) error {
	orig := via[0].URL
	switch {
	case req.URL.Scheme != orig.Scheme || req.URL.Host != orig.Host:
		return fmt.Errorf("%w: %s redirects to another host or scheme (%s://%s)", errRedirectRefused, orig.Redacted(), req.URL.Scheme, req.URL.Host)
	case len(via) > maxRedirects:
		return fmt.Errorf("%w: more than %d redirects from %s", errRedirectRefused, maxRedirects, orig.Redacted())
	}
	return nil
}
